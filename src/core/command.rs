//! Chat commands typed by people (`!stop`, `!help`), parsed into an enum by one pure
//! function so the dispatch code never looks at raw text.

use super::poll::Reply;

/// A chat command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Stop the running turn (`session/cancel`).
    Stop,
    /// Show what the gateway understands.
    Help,
    /// Show the state of the room's agents.
    Status,
    /// Answer a permission poll (`!allow`, `!always`, `!deny`, `!reject`), best as a reply
    /// to the poll.
    Answer(Reply),
    /// Show or set what the room sees of the agents' work (`!show tools`).
    Show(Option<String>),
    /// Start a new conversation: a new session without the earlier transcript (`!new`).
    NewConversation,
    /// A word after the prefix that is no command we know.
    Unknown(String),
}

/// Parses `body` as a chat command starting with `prefix`. Returns `None` for ordinary
/// messages, which become prompts.
pub fn parse(prefix: &str, body: &str) -> Option<Command> {
    let rest = body.trim().strip_prefix(prefix)?;
    let word = rest.split_whitespace().next().unwrap_or("");
    if word.is_empty() || rest.starts_with(char::is_whitespace) {
        return None;
    }
    let argument = rest[word.len()..].split_whitespace().next();
    Some(match word.to_lowercase().as_str() {
        "stop" | "cancel" => Command::Stop,
        "help" | "h" | "?" => Command::Help,
        "status" => Command::Status,
        "allow" | "approve" | "yes" => Command::Answer(Reply::Allow),
        "always" => Command::Answer(Reply::Always),
        "deny" | "never" | "no" => Command::Answer(Reply::Deny),
        "reject" => Command::Answer(Reply::Reject),
        "show" => Command::Show(argument.map(str::to_lowercase)),
        "new" | "reset" => Command::NewConversation,
        other => Command::Unknown(other.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_table() {
        let table: &[(&str, &str, Option<Command>)] = &[
            ("!", "!stop", Some(Command::Stop)),
            ("!", "  !STOP  ", Some(Command::Stop)),
            ("!", "!cancel now", Some(Command::Stop)),
            ("!", "!help", Some(Command::Help)),
            ("!", "!status", Some(Command::Status)),
            ("!", "!allow", Some(Command::Answer(Reply::Allow))),
            ("!", "!Always", Some(Command::Answer(Reply::Always))),
            ("!", "!deny", Some(Command::Answer(Reply::Deny))),
            ("!", "!reject", Some(Command::Answer(Reply::Reject))),
            ("!", "!show", Some(Command::Show(None))),
            ("!", "!new", Some(Command::NewConversation)),
            ("!", "!reset", Some(Command::NewConversation)),
            (
                "!",
                "!show Tools",
                Some(Command::Show(Some("tools".into()))),
            ),
            (
                "!",
                "!frobnicate x",
                Some(Command::Unknown("frobnicate".into())),
            ),
            ("!", "stop", None),
            ("!", "please !stop", None),
            ("!", "! stop", None),
            ("!", "!", None),
            ("!", "", None),
            ("!", "/stop", None),
            ("sk:", "sk:stop", Some(Command::Stop)),
            ("sk:", "!stop", None),
        ];
        for (prefix, body, expected) in table {
            assert_eq!(&parse(prefix, body), expected, "{prefix:?} {body:?}");
        }
    }
}
