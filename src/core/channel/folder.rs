//! The conversation's folder, a part of its own: opened once, when first needed, and held
//! (its sessions work in it; every file of theirs the gateway touches is opened beneath
//! it), until worktree mode takes it away.

use std::sync::Arc;

use crate::model::ids::RoomId;
use crate::workspace::Workspace;
use crate::workspace::folder::Folder;

/// The conversation's folder, once opened.
#[derive(Default)]
pub(super) struct FolderSlot {
    /// The folder, held by handle.
    held: Option<Arc<Folder>>,
}

impl FolderSlot {
    /// The folder of `room` in `workspace`, opened the first time (made if it is not
    /// there; in worktree mode by `git`, off the async threads). `Err`: why it cannot be
    /// used.
    pub(super) async fn open(
        &mut self,
        workspace: &Workspace,
        room: &RoomId,
    ) -> Result<Arc<Folder>, String> {
        if let Some(folder) = &self.held {
            return Ok(folder.clone());
        }
        let (workspace, room) = (workspace.clone(), room.clone());
        let made = tokio::task::spawn_blocking(move || workspace.prepare(&room))
            .await
            .map_err(|e| e.to_string())
            .and_then(|made| made.map_err(|e| e.to_string()));
        let folder = Arc::new(made?);
        self.held = Some(folder.clone());
        Ok(folder)
    }

    /// The folder is gone (its worktree removed): the next need makes and opens it again.
    pub(super) fn forget(&mut self) {
        self.held = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_folder_is_opened_once_and_again_after_it_was_forgotten() {
        let root = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(root.path().join("{room}"));
        let room = RoomId::new("!r:x");
        let mut slot = FolderSlot::default();
        let first = slot.open(&workspace, &room).await.expect("made");
        let again = slot.open(&workspace, &room).await.expect("held");
        assert!(Arc::ptr_eq(&first, &again), "opened once");
        slot.forget();
        let after = slot.open(&workspace, &room).await.expect("opened again");
        assert!(!Arc::ptr_eq(&first, &after));
        assert_eq!(after.path(), first.path());
    }
}
