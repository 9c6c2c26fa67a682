//! What the room is told about files: people's files taken in (or not), files posted.

/// A size in MB, for limits.
fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1_048_576.0)
}

/// Said when files arrive without a question and wait for their sender's next message.
pub fn waiting_for_question(names: Vec<&str>) -> String {
    let what = match names.as_slice() {
        [one] => format!("\"{one}\""),
        _ => format!("{} files", names.len()),
    };
    format!(
        "📎 Got {what}. What should I do with it? Your next message here goes with it \
         (send a caption with the file to ask at once)."
    )
}

/// Said when a file is larger than the gateway takes; it was not downloaded.
pub fn file_too_large(name: &str, size: u64, max: u64) -> String {
    format!(
        "📎 \"{name}\" is {}, more than the {} I take (media.max_file_mb): I did not fetch it.",
        mb(size),
        mb(max)
    )
}

/// Said when a file could not be fetched (or decrypted).
pub fn file_not_fetched(name: &str, why: &str) -> String {
    format!("📎 I could not fetch \"{name}\": {why}. Please send it again.")
}

/// Said when a file was fetched but could not be saved in the workspace.
pub fn file_not_saved(name: &str, why: &str) -> String {
    format!("📎 I could not save \"{name}\" in my workspace: {why}.")
}

/// Said when a file could not be posted (outside the workspace, missing, too large, or
/// refused by the homeserver).
pub fn file_not_posted(name: &str, why: &str) -> String {
    format!("📎 I did not post \"{name}\": {why}.")
}

/// Answer to `!file` without a path.
pub fn file_usage(prefix: &str) -> String {
    format!(
        "Name a file of my workspace: {prefix}file PATH (for example {prefix}file src/main.rs)."
    )
}

/// Posted in reply to a voice note once it is heard: the speaker sees what was understood
/// (and can edit nothing, so a wrong hearing is theirs to correct in their next message).
pub fn heard(transcript: &str) -> String {
    format!("🎙️ heard: {transcript}")
}

/// Said when a voice note could not be heard: it goes to the agent as a file instead.
pub fn not_heard(name: &str, why: &str) -> String {
    format!("🎙️ I could not hear \"{name}\" ({why}), so it goes to the agent as a file.")
}
