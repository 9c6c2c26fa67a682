//! Where a conversation's files are: the agent's workspace, or, when the configured path holds
//! `{room}`, a folder of its own for each room (so rooms do not share files), made on first
//! use: an empty folder, or in worktree mode a `git worktree` of a repository ([`worktree`]).

pub mod folder;

use std::path::{Component, Path, PathBuf};

use crate::model::ids::RoomId;

pub mod worktree;

pub use worktree::{WorktreeError, WorktreeStatus, Worktrees};

/// The placeholder replaced by a room's folder name.
pub const ROOM: &str = "{room}";

/// An agent's workspace, as configured.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The configured path, possibly with [`ROOM`] in it.
    template: PathBuf,
    /// In worktree mode, where each room's worktree comes from.
    worktrees: Option<Worktrees>,
    /// With the SSH runner, the agent's way to its host, where the folders are.
    remote: Option<std::sync::Arc<crate::remote::Link>>,
}

/// Why a conversation's folder could not be made.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// The folder could not be made.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The folder could not be opened (it is a link, or reached through one).
    #[error(transparent)]
    Folder(#[from] folder::FolderError),
    /// Its worktree could not be made.
    #[error(transparent)]
    Worktree(#[from] WorktreeError),
}

impl Workspace {
    /// A workspace from its configured path.
    pub fn new(template: impl Into<PathBuf>) -> Self {
        Self {
            template: template.into(),
            worktrees: None,
            remote: None,
        }
    }

    /// The same workspace on the agent's host, reached through `link` (the SSH runner):
    /// its folders are opened there.
    pub fn on_host(self, remote: Option<std::sync::Arc<crate::remote::Link>>) -> Self {
        Self { remote, ..self }
    }

    /// The same workspace in worktree mode: each room's folder is a worktree of `worktrees`'
    /// repository (the configuration makes sure the path holds [`ROOM`]).
    pub fn with_worktrees(self, worktrees: Option<Worktrees>) -> Self {
        Self { worktrees, ..self }
    }

    /// Where rooms' worktrees come from, in worktree mode.
    pub fn worktrees(&self) -> Option<&Worktrees> {
        self.worktrees.as_ref()
    }

    /// The branch of `room`'s worktree, in worktree mode.
    pub fn branch_for_room(&self, room: &RoomId) -> Option<String> {
        let worktrees = self.worktrees.as_ref()?;
        Some(worktrees.branch(&folder_name(room)))
    }

    /// Whether each room has a folder of its own.
    pub fn per_room(&self) -> bool {
        self.template.to_string_lossy().contains(ROOM)
    }

    /// The folder that holds every room's folder (the whole workspace when it is shared):
    /// the agent process's working folder, and all its sandbox lets it write.
    pub fn root(&self) -> PathBuf {
        let mut root = PathBuf::new();
        for part in self.template.components() {
            if part.as_os_str().to_string_lossy().contains(ROOM) {
                break;
            }
            root.push(part);
        }
        root
    }

    /// The folder of `room`'s conversation.
    pub fn for_room(&self, room: &RoomId) -> PathBuf {
        if !self.per_room() {
            return self.template.clone();
        }
        let name = folder_name(room);
        let path = self.template.to_string_lossy().replace(ROOM, &name);
        PathBuf::from(path)
    }

    /// The folder of `room`'s conversation, made if it does not exist yet (in worktree
    /// mode, a worktree on the room's branch), and opened: below the root, without
    /// following a link (the agent may write what is there). Runs `git` in worktree mode:
    /// call it where blocking is fine.
    pub fn prepare(&self, room: &RoomId) -> Result<folder::Folder, WorkspaceError> {
        let path = self.for_room(room);
        if let (Some(worktrees), Some(branch)) = (&self.worktrees, self.branch_for_room(room))
            && self.per_room()
            && worktrees.ensure(&path, &branch)?
        {
            tracing::info!(folder = %path.display(), %branch, "worktree made");
        }
        self.open(room)
    }

    /// The folder of `room`'s conversation, opened (made if missing) without following a
    /// link below the root.
    pub fn open(&self, room: &RoomId) -> Result<folder::Folder, WorkspaceError> {
        let (root, path) = (self.root(), self.for_room(room));
        let below = path.strip_prefix(&root).unwrap_or(Path::new(""));
        if let Some(link) = &self.remote {
            return Ok(folder::Folder::open_remote(link.clone(), &root, below)?);
        }
        Ok(folder::Folder::open(&root, below)?)
    }
}

/// A room's folder name: its ID without the `!`, when that is a plain name; otherwise the
/// characters a file name should not hold become `_`, and a hash of the whole ID keeps two
/// rooms apart that would read the same.
pub fn folder_name(room: &RoomId) -> String {
    let room = room.as_str();
    let bare = room.strip_prefix('!').unwrap_or(room);
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    let name: String = bare
        .chars()
        .map(|c| if plain(c) { c } else { '_' })
        .collect();
    let safe = name == bare && !name.is_empty() && !name.starts_with('.');
    if safe {
        return name;
    }
    format!("{}-{:016x}", name.trim_start_matches('.'), fnv1a(room))
}

/// FNV-1a, 64 bits: stable across builds and versions, unlike the standard library's hasher,
/// so a room keeps its folder.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Whether `path` holds a `{…}` other than [`ROOM`] (a typo the config should name).
pub fn unknown_placeholder(path: &Path) -> Option<String> {
    let text = path.to_string_lossy().replace(ROOM, "");
    let start = text.find('{')?;
    let end = text[start..]
        .find('}')
        .map(|e| start + e + 1)
        .unwrap_or(text.len());
    Some(text[start..end].to_owned())
}

/// Whether `path` is absolute and without `..` (a room folder must stay inside its root).
pub fn is_plain(path: &Path) -> bool {
    path.is_absolute() && !path.components().any(|c| c == Component::ParentDir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn room(id: &str) -> RoomId {
        RoomId::from(id)
    }

    #[test]
    fn a_shared_workspace_is_the_same_for_every_room() {
        let ws = Workspace::new("/srv/work/claude");
        assert!(!ws.per_room());
        assert_eq!(ws.root(), PathBuf::from("/srv/work/claude"));
        assert_eq!(
            ws.for_room(&room("!a:b")),
            PathBuf::from("/srv/work/claude")
        );
    }

    #[test]
    fn each_room_gets_its_own_folder_under_the_root() {
        let ws = Workspace::new("/srv/work/claude/room-{room}/src");
        assert!(ws.per_room());
        assert_eq!(ws.root(), PathBuf::from("/srv/work/claude"));
        // Room version 12: no server part, a plain name.
        let v12 = "!Ab3_x-Yz09";
        assert_eq!(
            ws.for_room(&room(v12)),
            PathBuf::from("/srv/work/claude/room-Ab3_x-Yz09/src")
        );
        // Older IDs: the `:` is replaced, and the hash keeps `!a:b` and `!a_b` apart.
        let (old, look_alike) = (ws.for_room(&room("!a:b")), ws.for_room(&room("!a_b")));
        assert_ne!(old, look_alike);
        let old_text = old.to_string_lossy();
        assert!(
            old_text.starts_with("/srv/work/claude/room-a_b-"),
            "{old:?}"
        );
    }

    #[test]
    fn a_room_folder_name_never_leaves_its_folder() {
        for id in [
            "!../../etc",
            "!/abs",
            "!..",
            "!.",
            "!",
            "!a/b\\c\0d",
            "!ü:x",
        ] {
            let name = folder_name(&RoomId::new(id));
            assert!(!name.is_empty(), "{id}");
            assert!(!name.contains('/') && !name.contains('\0'), "{id}: {name}");
            assert!(!name.starts_with('.'), "{id}: {name}");
            assert_eq!(Path::new(&name).components().count(), 1, "{id}: {name}");
        }
        assert_ne!(
            folder_name(&RoomId::new("!..")),
            folder_name(&RoomId::new("!."))
        );
    }

    #[test]
    fn placeholders_other_than_room_are_named() {
        assert_eq!(unknown_placeholder(Path::new("/w/{room}")), None);
        assert_eq!(
            unknown_placeholder(Path::new("/w/{rooms}")),
            Some("{rooms}".to_owned())
        );
        assert_eq!(
            unknown_placeholder(Path::new("/w/{room")),
            Some("{room".to_owned())
        );
    }
}
