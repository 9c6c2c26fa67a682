//! What `!worktree` says.

/// Answer to `!worktree` for an agent without worktree mode.
pub fn no_worktree_mode(agent: &str, folder: &str) -> String {
    format!("{agent} works in {folder}, not in a git worktree (worktree mode is off for it).")
}

/// Answer to `!worktree` before the conversation's worktree is made.
pub fn worktree_not_yet(agent: &str, branch: &str) -> String {
    format!(
        "🌿 {agent} has no worktree for this conversation yet: the next message makes one, on \
         branch `{branch}`."
    )
}

/// Answer to `!worktree`: the conversation's worktree.
pub fn worktree_status(
    agent: &str,
    folder: &str,
    status: &crate::workspace::WorktreeStatus,
) -> String {
    let ahead = match status.commits_ahead {
        Some(n) => format!(
            ", {} ahead of its base",
            super::number(n, "commit", "commits")
        ),
        None => String::new(),
    };
    format!(
        "🌿 {agent} works in {folder} on branch `{}`: {} with uncommitted changes{ahead}; \
         last commit: {}.",
        status.branch,
        super::count(status.changed_files, "file", "files"),
        status.last_commit
    )
}

/// Answer to `!worktree remove` once done.
pub fn worktree_removed(agent: &str, branch: &str) -> String {
    format!(
        "🌿 The worktree is removed; branch `{branch}` keeps its commits. {agent}'s next message \
         here checks it out again."
    )
}

/// Answer to a `!worktree` that git refused or that failed.
pub fn worktree_failed(error: &str) -> String {
    format!("⚠️ The worktree is unchanged: {error}")
}

/// Answer to `!worktree remove` while a turn runs.
pub const WORKTREE_BUSY: &str =
    "A turn is running in the worktree: stop it first (!stop), or wait for it to end.";

/// Answer to `!worktree` with a word it does not know.
pub fn worktree_usage(prefix: &str) -> String {
    format!(
        "Use {prefix}worktree to see this conversation's worktree, {prefix}worktree remove to take it away."
    )
}
