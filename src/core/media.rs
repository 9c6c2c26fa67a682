//! People's files on their way to an agent: saved in the conversation's inbox folder under
//! a safe name, and given to the agent the way it can take them (an image or audio block, a
//! text file's content, or a link to the saved file). Everything here but [`save`] is pure.
//! See `docs/conversations.md`.

use std::path::{Path, PathBuf};

use crate::model::media::{IncomingMedia, MediaKind, MediaLimits, PromptBlock, PromptSupport};
use crate::workspace::folder::{Folder, FolderError, Write};

/// The folder of a workspace where people's files are saved (it ignores itself in git, so a
/// worktree's status stays about the work).
pub const INBOX: &str = "sidekicks-inbox";

/// Longest file name kept, in characters (the extension is kept whole).
const NAME_CHARS: usize = 100;

/// A file someone sent, fetched and saved.
#[derive(Debug, Clone)]
pub struct Received {
    /// What the chat side said about it.
    pub media: IncomingMedia,
    /// Where it was saved.
    pub path: PathBuf,
    /// Its bytes.
    pub data: Vec<u8>,
    /// Whether it is a voice note that was heard: its transcript is in the prompt.
    pub heard: bool,
}

/// `name` as a file name that stays inside the folder it is saved in: its last path part
/// only, no control characters, no leading dots (so never `..` nor a hidden file), at most
/// [`NAME_CHARS`] characters; `file` when nothing is left.
pub fn safe_name(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let clean: String = last.chars().filter(|c| !c.is_control()).collect();
    let clean = clean.trim().trim_start_matches('.').trim();
    if clean.is_empty() {
        return "file".to_owned();
    }
    if clean.chars().count() <= NAME_CHARS {
        return clean.to_owned();
    }
    let (stem, ext) = split_extension(clean);
    let keep = NAME_CHARS.saturating_sub(ext.chars().count()).max(1);
    format!("{}{ext}", stem.chars().take(keep).collect::<String>())
}

/// A name's stem and its extension with the dot (`("report", ".pdf")`; `("notes", "")`).
fn split_extension(name: &str) -> (&str, &str) {
    match name.rfind('.') {
        Some(dot) if dot > 0 && name.len() - dot <= 16 => name.split_at(dot),
        _ => (name, ""),
    }
}

/// The `n`th name tried for `name` when it is taken: `name`, `stem (2).ext`, `stem (3).ext`…
fn numbered(name: &str, n: u32) -> String {
    if n <= 1 {
        return name.to_owned();
    }
    let (stem, ext) = split_extension(name);
    format!("{stem} ({n}){ext}")
}

/// Saves `data` in the conversation's inbox under `name` made safe, numbered when taken;
/// never overwrites nor follows a link (each name is created new, beneath the folder's
/// handle). Returns where it went.
pub fn save(folder: &Folder, name: &str, data: &[u8]) -> std::io::Result<PathBuf> {
    let as_io = |e: FolderError| match e {
        FolderError::Io(e) => e,
        other => std::io::Error::other(other.to_string()),
    };
    let inbox = Path::new(INBOX);
    folder.create_dirs(inbox).map_err(as_io)?;
    let ignore = inbox.join(".gitignore");
    let _ = folder.write(&ignore, b"*\n", Write::CreateNew, 0);
    let name = safe_name(name);
    for n in 1..=10_000 {
        let path = inbox.join(numbered(&name, n));
        match folder.write(&path, data, Write::CreateNew, 0) {
            Ok(_) => return Ok(folder.path().join(path)),
            Err(FolderError::Io(e)) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(as_io(e)),
        }
    }
    Err(std::io::Error::other("too many files of that name"))
}

/// Whether a file is text an agent can read inline: a text MIME type (or none given), valid
/// UTF-8 and no NUL byte.
pub fn is_text(mimetype: Option<&str>, data: &[u8]) -> bool {
    let textual_type = match mimetype.map(|m| m.split(';').next().unwrap_or(m).trim()) {
        None | Some("application/octet-stream") => true,
        Some(m) => {
            m.starts_with("text/")
                || m.ends_with("+json")
                || m.ends_with("+xml")
                || matches!(
                    m,
                    "application/json"
                        | "application/xml"
                        | "application/x-sh"
                        | "application/javascript"
                        | "application/toml"
                        | "application/yaml"
                        | "application/x-yaml"
                        | "application/x-patch"
                        | "application/x-diff"
                )
        }
    };
    textual_type && !data.contains(&0) && std::str::from_utf8(data).is_ok()
}

/// The MIME type of a file: as its sender gave it, else guessed from its name.
pub fn mimetype(media: &IncomingMedia) -> String {
    media
        .mimetype
        .clone()
        .filter(|m| !m.trim().is_empty())
        .unwrap_or_else(|| guess_mimetype(&media.name))
}

/// The MIME type a file name suggests (`application/octet-stream` when it says nothing).
pub fn guess_mimetype(name: &str) -> String {
    mime_guess::from_path(name)
        .first_raw()
        .unwrap_or("application/octet-stream")
        .to_owned()
}

/// How the agent gets a received file: an image or audio block where it takes them (and
/// the file is one), a small text file's content where it takes embedded context, else a
/// link to the saved file.
pub fn block(file: &Received, support: PromptSupport, limits: &MediaLimits) -> PromptBlock {
    let mime = mimetype(&file.media);
    let uri = file_uri(&file.path);
    match file.media.kind {
        MediaKind::Image if support.image && mime.starts_with("image/") => PromptBlock::Image {
            mime,
            data: file.data.clone(),
        },
        MediaKind::Audio if support.audio && mime.starts_with("audio/") => PromptBlock::Audio {
            mime,
            data: file.data.clone(),
        },
        MediaKind::File
            if support.embedded_context
                && file.data.len() as u64 <= limits.embed_text_max_bytes
                && is_text(file.media.mimetype.as_deref(), &file.data) =>
        {
            PromptBlock::EmbeddedText {
                uri,
                mime: Some(mime),
                text: String::from_utf8_lossy(&file.data).into_owned(),
            }
        }
        _ => PromptBlock::Link {
            uri,
            name: file_name(&file.path),
            mime: Some(mime),
            size: file.data.len() as u64,
        },
    }
}

/// The line the prompt's text gets for a received file, in brackets like everything the
/// gateway adds: what it is and where it was saved (relative to the workspace).
pub fn note(file: &Received, workspace: &Path) -> String {
    let shown = file.path.strip_prefix(workspace).unwrap_or(&file.path);
    format!(
        "[Attached {} \"{}\" ({}, {}), saved as {}]",
        file.media.kind.noun(),
        clean_for_note(&file.media.name),
        mimetype(&file.media),
        human_size(file.data.len() as u64),
        shown.display()
    )
}

/// The transcript's line for a file that came with a prompt (before it is fetched).
pub fn transcript_note(media: &IncomingMedia) -> String {
    format!(
        "[Attached {} \"{}\"]",
        media.kind.noun(),
        clean_for_note(&media.name)
    )
}

/// A sender's file name fit for one bracketed line: no control characters, quotes or
/// brackets, at most 120 characters.
fn clean_for_note(name: &str) -> String {
    name.chars()
        .filter(|c| !c.is_control() && !matches!(c, '[' | ']' | '"'))
        .take(120)
        .collect()
}

/// A size in words: `812 bytes`, `12.5 KB`, `3.1 MB`.
pub fn human_size(bytes: u64) -> String {
    match bytes {
        0..1024 => format!("{bytes} bytes"),
        1024..1_048_576 => format!("{:.1} KB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MB", bytes as f64 / 1_048_576.0),
    }
}

/// `file://` and the absolute path, spaces and the like percent-encoded (a relative path,
/// which the workspace never gives, as it is).
pub fn file_uri(path: &Path) -> String {
    url::Url::from_file_path(path)
        .map(String::from)
        .unwrap_or_else(|()| format!("file://{}", path.display()))
}

/// A path's file name, as text.
fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Why a file of the workspace cannot be posted.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WorkspaceFileError {
    /// It is outside the workspace (after links are followed).
    #[error("it is outside the workspace")]
    Outside,
    /// There is no such file, or it is a folder.
    #[error("there is no such file")]
    Missing,
    /// It is larger than the limit.
    #[error("it is {}, more than the {} posted at most", human_size(*.0), human_size(*.1))]
    TooLarge(u64, u64),
    /// It could not be read.
    #[error("it cannot be read: {0}")]
    Unreadable(String),
}

/// Reads `path` (relative to the conversation's folder, or absolute inside it) when it is
/// a regular file there, reached without a link, of at most `max_bytes`; returns its name
/// and bytes.
pub fn read_workspace_file(
    folder: &Folder,
    path: &Path,
    max_bytes: u64,
) -> Result<(String, Vec<u8>), WorkspaceFileError> {
    let data = folder.read(path, max_bytes).map_err(|e| match e {
        FolderError::Outside(_) => WorkspaceFileError::Outside,
        FolderError::NotFound | FolderError::NotAFile => WorkspaceFileError::Missing,
        FolderError::TooLarge { size, max } => WorkspaceFileError::TooLarge(size, max),
        FolderError::Io(e) => WorkspaceFileError::Unreadable(e.to_string()),
    })?;
    Ok((file_name(path), data))
}

/// The path a `file://` URI names, if it is one.
pub fn path_of_file_uri(uri: &str) -> Option<PathBuf> {
    url::Url::parse(uri).ok()?.to_file_path().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `dir` as a conversation's folder.
    fn folder(dir: &Path) -> Folder {
        Folder::open(dir, Path::new("")).unwrap()
    }

    fn media(kind: MediaKind, name: &str, mimetype: Option<&str>) -> IncomingMedia {
        IncomingMedia {
            kind,
            name: name.into(),
            mimetype: mimetype.map(Into::into),
            size: None,
            source: "src".into(),
            event_id: "$e".into(),
            voice: false,
        }
    }

    #[test]
    fn names_are_made_safe() {
        let table = [
            ("cat.png", "cat.png"),
            ("../../etc/passwd", "passwd"),
            ("..", "file"),
            ("...", "file"),
            ("", "file"),
            ("dir\\evil.txt", "evil.txt"),
            (".bashrc", "bashrc"),
            ("a\u{0}b\nc.txt", "abc.txt"),
            ("  spaced name.log ", "spaced name.log"),
            ("/", "file"),
        ];
        for (given, safe) in table {
            assert_eq!(safe_name(given), safe, "{given:?}");
        }
        let long = format!("{}.tar.gz", "x".repeat(300));
        let safe = safe_name(&long);
        assert_eq!(safe.chars().count(), NAME_CHARS);
        assert!(safe.ends_with(".gz"), "{safe}");
    }

    #[test]
    fn saved_files_stay_in_the_inbox_and_never_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let first = save(&folder(dir.path()), "report.pdf", b"one").unwrap();
        let second = save(&folder(dir.path()), "report.pdf", b"two").unwrap();
        let third = save(&folder(dir.path()), "sub/report.pdf", b"three").unwrap();
        let inbox = dir.path().join(INBOX);
        assert_eq!(first, inbox.join("report.pdf"));
        assert_eq!(second, inbox.join("report (2).pdf"));
        assert_eq!(third, inbox.join("report (3).pdf"));
        assert_eq!(std::fs::read(&first).unwrap(), b"one");
        assert_eq!(std::fs::read(&second).unwrap(), b"two");
        let escaped = save(&folder(dir.path()), "../../etc/passwd", b"x").unwrap();
        assert_eq!(escaped, inbox.join("passwd"));
        assert_eq!(
            std::fs::read_to_string(inbox.join(".gitignore")).unwrap(),
            "*\n"
        );
        // A file someone put where a name would go is not overwritten, nor a link followed.
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "mine").unwrap();
        std::os::unix::fs::symlink(&outside, inbox.join("notes.txt")).unwrap();
        let saved = save(&folder(dir.path()), "notes.txt", b"new").unwrap();
        assert_eq!(saved, inbox.join("notes (2).txt"));
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "mine");
    }

    #[test]
    fn an_inbox_that_is_a_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join(INBOX)).unwrap();
        assert!(save(&folder(dir.path()), "x.txt", b"x").is_err());
        assert!(!elsewhere.path().join("x.txt").exists());
    }

    #[test]
    fn text_is_told_from_binary() {
        assert!(is_text(Some("text/plain"), b"hello"));
        assert!(is_text(None, b"fn main() {}"));
        assert!(is_text(Some("application/json"), b"{}"));
        assert!(is_text(Some("text/x-log; charset=utf-8"), b"line"));
        assert!(!is_text(Some("text/plain"), b"a\0b"));
        assert!(!is_text(None, &[0xff, 0xfe, 0x00]));
        assert!(!is_text(Some("application/pdf"), b"%PDF-1.7"));
        assert!(!is_text(Some("image/png"), b"png"));
    }

    fn received(kind: MediaKind, name: &str, mimetype: Option<&str>, data: &[u8]) -> Received {
        Received {
            media: media(kind, name, mimetype),
            path: PathBuf::from(format!("/w/{INBOX}/{name}")),
            data: data.to_vec(),
            heard: false,
        }
    }

    #[test]
    fn each_file_goes_the_way_the_agent_can_take_it() {
        let all = PromptSupport {
            image: true,
            audio: true,
            embedded_context: true,
        };
        let none = PromptSupport::default();
        let limits = MediaLimits::default();
        let picture = received(MediaKind::Image, "cat.png", Some("image/png"), b"PNG");
        assert!(matches!(
            block(&picture, all, &limits),
            PromptBlock::Image { ref mime, ref data } if mime == "image/png" && data == b"PNG"
        ));
        // Without image support: a link to the saved file.
        assert_eq!(
            block(&picture, none, &limits),
            PromptBlock::Link {
                uri: format!("file:///w/{INBOX}/cat.png"),
                name: "cat.png".into(),
                mime: Some("image/png".into()),
                size: 3,
            }
        );
        // A picture whose type is no image type is no image block.
        let odd = received(MediaKind::Image, "x.bin", Some("application/pdf"), b"x");
        assert!(matches!(
            block(&odd, all, &limits),
            PromptBlock::Link { .. }
        ));
        let voice = received(MediaKind::Audio, "voice.ogg", Some("audio/ogg"), b"OGG");
        assert!(matches!(
            block(&voice, all, &limits),
            PromptBlock::Audio { .. }
        ));
        assert!(matches!(
            block(&voice, none, &limits),
            PromptBlock::Link { .. }
        ));
        let log = received(
            MediaKind::File,
            "build.log",
            Some("text/plain"),
            b"error: x",
        );
        assert_eq!(
            block(&log, all, &limits),
            PromptBlock::EmbeddedText {
                uri: format!("file:///w/{INBOX}/build.log"),
                mime: Some("text/plain".into()),
                text: "error: x".into(),
            }
        );
        assert!(matches!(
            block(&log, none, &limits),
            PromptBlock::Link { .. }
        ));
        let small = MediaLimits {
            embed_text_max_bytes: 4,
            ..MediaLimits::default()
        };
        assert!(matches!(block(&log, all, &small), PromptBlock::Link { .. }));
        let pdf = received(MediaKind::File, "a.pdf", Some("application/pdf"), b"%PDF");
        assert!(matches!(
            block(&pdf, all, &limits),
            PromptBlock::Link { .. }
        ));
        let video = received(MediaKind::Video, "v.mp4", Some("video/mp4"), b"MP4");
        assert!(matches!(
            block(&video, all, &limits),
            PromptBlock::Link { .. }
        ));
    }

    #[test]
    fn only_files_inside_the_workspace_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/main.rs"), "fn main() {}").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "key").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("link.txt")).unwrap();
        let ws = folder(&root);
        let read = |p: &str| read_workspace_file(&ws, Path::new(p), 1024);
        assert_eq!(
            read("src/main.rs"),
            Ok(("main.rs".into(), b"fn main() {}".to_vec()))
        );
        let absolute = root.join("src/main.rs");
        assert!(read(absolute.to_str().unwrap()).is_ok());
        assert_eq!(read("../secret.txt"), Err(WorkspaceFileError::Outside));
        assert_eq!(
            read("src/../../secret.txt"),
            Err(WorkspaceFileError::Outside)
        );
        assert_eq!(read("link.txt"), Err(WorkspaceFileError::Outside));
        assert_eq!(read("/etc/passwd"), Err(WorkspaceFileError::Outside));
        assert_eq!(read("../nothing"), Err(WorkspaceFileError::Outside));
        assert_eq!(read("nothing.txt"), Err(WorkspaceFileError::Missing));
        assert_eq!(read("src"), Err(WorkspaceFileError::Missing));
        assert_eq!(
            read_workspace_file(&ws, Path::new("src/main.rs"), 4),
            Err(WorkspaceFileError::TooLarge(12, 4))
        );
        assert_eq!(
            path_of_file_uri("file:///w/a%20b.txt"),
            Some(PathBuf::from("/w/a b.txt"))
        );
        assert_eq!(path_of_file_uri("https://example.com/x"), None);
    }

    #[test]
    fn notes_say_what_and_where_in_brackets() {
        let file = Received {
            media: media(MediaKind::Image, "shot\n].png", None),
            path: PathBuf::from(format!("/w/{INBOX}/shot.png")),
            data: vec![0; 2048],
            heard: false,
        };
        assert_eq!(
            note(&file, Path::new("/w")),
            format!(
                "[Attached picture \"shot.png\" (image/png, 2.0 KB), saved as {INBOX}/shot.png]"
            )
        );
        assert_eq!(
            transcript_note(&file.media),
            "[Attached picture \"shot.png\"]"
        );
        assert_eq!(file_uri(Path::new("/w/a b#.txt")), "file:///w/a%20b%23.txt");
        assert_eq!(human_size(812), "812 bytes");
        assert_eq!(human_size(3 * 1_048_576), "3.0 MB");
    }
}
