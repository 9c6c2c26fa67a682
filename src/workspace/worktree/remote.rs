//! Worktree mode on the agent's host (the SSH runner): both sides of one step. [`ask`] sends
//! it from the gateway; [`serve`] does it in the `sidekicks remote` helper there with this
//! same worktree code, git in the host's sandbox. Its result, or its error, crosses as JSON.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::{GitLauncher, WorktreeError, Worktrees};
use crate::remote::Link;
use crate::remote::wire::{self, Request, WireError, WorktreeAnswer, WorktreeOp, WorktreeRequest};

/// Does `op` on the agent's host that `link` reaches.
pub(super) fn ask<T: DeserializeOwned>(
    worktrees: &Worktrees,
    link: &Arc<Link>,
    op: WorktreeOp,
) -> Result<T, WorktreeError> {
    let far = |what: String| WorktreeError::NoGit(std::io::Error::other(what));
    let mut boxing = link.settings().boxing.clone();
    boxing.repository = Some(worktrees.repository.clone());
    let request = Request::Worktree(WorktreeRequest {
        boxing,
        base: worktrees.base.clone(),
        branch_prefix: worktrees.branch_prefix.clone(),
        op,
    });
    let (answer, _) = link.ask::<WorktreeAnswer>(&request, &[]).map_err(far)?;
    match answer {
        WorktreeAnswer::Done { value } => serde_json::from_value(value).map_err(|e| {
            far(format!(
                "the agent's host answered what is not understood: {e}"
            ))
        }),
        WorktreeAnswer::Failed { error } => Err(from_json(error)),
    }
}

/// The helper's side: does `request` with git started by `launcher` (in the host's
/// sandbox; `None`: directly) and answers on `out`.
pub fn serve(
    request: WorktreeRequest,
    launcher: Option<GitLauncher>,
    out: &mut impl std::io::Write,
) -> Result<(), WireError> {
    let Some(repository) = request.boxing.repository.clone() else {
        let error = WorktreeError::NoGit(std::io::Error::other("no repository named"));
        return refuse(out, &error);
    };
    let worktrees = Worktrees {
        repository,
        base: request.base,
        branch_prefix: request.branch_prefix,
        launcher,
        remote: None,
    };
    let done = match request.op {
        WorktreeOp::Ensure { folder, branch } => {
            worktrees.ensure(&folder, &branch).map(|m| json!(m))
        }
        WorktreeOp::Status { folder } => worktrees.status(&folder).map(|s| json!(s)),
        WorktreeOp::Remove { folder } => worktrees.remove(&folder).map(|()| Value::Null),
        WorktreeOp::List => worktrees.list().map(|l| json!(l)),
    };
    match done {
        Ok(value) => wire::write_line(out, &WorktreeAnswer::Done { value }),
        Err(error) => refuse(out, &error),
    }
}

/// Answers `error` on `out`.
pub fn refuse(out: &mut impl std::io::Write, error: &WorktreeError) -> Result<(), WireError> {
    let error = match error {
        WorktreeError::NoGit(e) => json!({"kind": "no_git", "message": e.to_string()}),
        WorktreeError::Git { command, message } => {
            json!({"kind": "git", "command": command, "message": message})
        }
        WorktreeError::NotAWorktree(path) => json!({"kind": "not_a_worktree", "path": path}),
        WorktreeError::ForeignGit(path) => json!({"kind": "foreign_git", "path": path}),
    };
    wire::write_line(out, &WorktreeAnswer::Failed { error })
}

/// The error the helper answered, as it was there.
fn from_json(error: Value) -> WorktreeError {
    let text = |key: &str| error[key].as_str().unwrap_or_default().to_owned();
    match error["kind"].as_str() {
        Some("git") => WorktreeError::Git {
            command: text("command"),
            message: text("message"),
        },
        Some("not_a_worktree") => WorktreeError::NotAWorktree(text("path").into()),
        Some("foreign_git") => WorktreeError::ForeignGit(text("path").into()),
        _ => WorktreeError::NoGit(std::io::Error::other(text("message"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_reads_back_as_it_was() {
        for error in [
            WorktreeError::Git {
                command: "worktree add".into(),
                message: "already exists".into(),
            },
            WorktreeError::NotAWorktree("/srv/w/a".into()),
            WorktreeError::ForeignGit("/srv/w/a/.git".into()),
            WorktreeError::NoGit(std::io::Error::other("no git here")),
        ] {
            let mut out = Vec::new();
            refuse(&mut out, &error).unwrap();
            let answer: WorktreeAnswer = wire::read_line(&mut &out[..]).unwrap();
            let WorktreeAnswer::Failed { error: sent } = answer else {
                panic!("{answer:?}")
            };
            assert_eq!(from_json(sent).to_string(), error.to_string());
        }
    }
}
