//! Worktree mode: each conversation works in a `git worktree` of one configured repository,
//! on a branch of its own, made on first use. Conversations then never see each other's
//! half-done changes, and what an agent did in a room is a branch people can review, merge
//! or throw away.
//!
//! Runs the `git` program (the one every agent uses too) rather than a library: the
//! worktrees it makes are then exactly those `git worktree list` shows people. Removing one
//! keeps its branch, so nothing committed is lost; git itself refuses to remove a worktree
//! with uncommitted changes.
//!
//! Git as a stranger: the agent may write the repository's git folder (it commits there),
//! so its configuration, hooks and the `.git` file of a worktree are the agent's. Git runs
//! where the agent runs its own commands, in its sandbox (a hook or an `fsmonitor` it wrote
//! reaches nothing of the gateway's), and always with hooks and `fsmonitor` off, without
//! the system's and the gateway user's configuration, and on a worktree whose `.git` was
//! checked first to point into the repository.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use crate::remote::wire::WorktreeOp;

pub mod remote;

/// How git is started for worktrees: given the folder to run in and git's arguments, the
/// command that runs `git` the way the agent runs its own commands (in its sandbox). Set by
/// the gateway when the agent is sandboxed; without it, git runs directly.
pub type GitLauncher = Arc<dyn Fn(&Path, &[String]) -> std::io::Result<Command> + Send + Sync>;

/// Configuration every git run gets on its command line, before the repository's own (which
/// the agent may write): no hooks, no filesystem monitor, no pager.
const GIT_OVERRIDES: [&str; 5] = [
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "--no-pager",
];

/// Why a worktree could not be made, read or removed.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    /// `git` could not be run at all.
    #[error("cannot run git: {0}")]
    NoGit(#[source] std::io::Error),
    /// `git` ran and refused; its own words.
    #[error("git {command} failed: {message}")]
    Git {
        /// The git subcommand, e.g. `worktree add`.
        command: String,
        /// What git wrote to stderr.
        message: String,
    },
    /// The conversation's folder exists and is no worktree: it is left alone.
    #[error("{0} exists and is not a git worktree; move it away or remove it")]
    NotAWorktree(PathBuf),
    /// The worktree's `.git` is a link, or does not point into the repository: git is not
    /// run on it.
    #[error("{0} does not point into the repository's git folder; git is not run on it")]
    ForeignGit(PathBuf),
}

/// Where conversations' worktrees come from: one repository, its branches named after the
/// agent and the room.
#[derive(Clone)]
pub struct Worktrees {
    /// The repository whose worktrees the conversations get.
    pub repository: PathBuf,
    /// What a new branch starts from; `None`: the repository's `HEAD` at that time.
    pub base: Option<String>,
    /// The start of every branch name; the conversation's folder name follows.
    pub branch_prefix: String,
    /// How git is started (in the agent's sandbox); `None`: directly.
    pub launcher: Option<GitLauncher>,
    /// With the SSH runner: the agent's host, where the repository and the worktrees are
    /// and every step is done (by this code, there).
    pub remote: Option<Arc<crate::remote::Link>>,
}

impl std::fmt::Debug for Worktrees {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worktrees")
            .field("repository", &self.repository)
            .field("base", &self.base)
            .field("branch_prefix", &self.branch_prefix)
            .field("sandboxed", &self.launcher.is_some())
            .field("remote", &self.remote.is_some())
            .finish()
    }
}

impl PartialEq for Worktrees {
    fn eq(&self, other: &Self) -> bool {
        (&self.repository, &self.base, &self.branch_prefix)
            == (&other.repository, &other.base, &other.branch_prefix)
            && self.launcher.is_some() == other.launcher.is_some()
            && self.remote.is_some() == other.remote.is_some()
    }
}

impl Eq for Worktrees {}

/// One conversation's worktree as it stands, for `!worktree`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WorktreeStatus {
    /// Its branch.
    pub branch: String,
    /// Files with uncommitted changes (untracked ones included).
    pub changed_files: usize,
    /// Commits on the branch that its base does not have.
    pub commits_ahead: Option<usize>,
    /// The last commit: short hash and subject.
    pub last_commit: String,
}

/// One worktree of the repository that belongs to a conversation, for listing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Listed {
    /// Its folder.
    pub path: PathBuf,
    /// Its branch.
    pub branch: String,
}

impl Worktrees {
    /// The branch of the conversation whose folder is called `folder_name`: the prefix and
    /// the name, each `.` made `_` (git refuses `..` in a branch name), with a hash added
    /// when that changed anything, so two names never share a branch.
    pub fn branch(&self, folder_name: &str) -> String {
        let plain = folder_name.replace('.', "_");
        if plain == folder_name {
            format!("{}{plain}", self.branch_prefix)
        } else {
            format!(
                "{}{plain}-{:08x}",
                self.branch_prefix,
                super::fnv1a(folder_name) as u32
            )
        }
    }

    /// Makes `folder` a worktree on `branch` unless it is one already: a branch made
    /// earlier is checked out again (its commits kept), else a new one starts from the base.
    /// Returns whether it was made now.
    pub fn ensure(&self, folder: &Path, branch: &str) -> Result<bool, WorktreeError> {
        if let Some(link) = &self.remote {
            let (folder, branch) = (folder.to_owned(), branch.to_owned());
            return remote::ask(self, link, WorktreeOp::Ensure { folder, branch });
        }
        if std::fs::symlink_metadata(folder.join(".git")).is_ok() {
            self.check_worktree(folder)?;
            return Ok(false);
        }
        if folder.exists() && std::fs::read_dir(folder).is_ok_and(|mut d| d.next().is_some()) {
            return Err(WorktreeError::NotAWorktree(folder.to_owned()));
        }
        if let Some(parent) = folder.parent() {
            std::fs::create_dir_all(parent).map_err(WorktreeError::NoGit)?;
        }
        // A worktree whose folder was deleted by hand still stands in git's list, and git
        // would refuse to make it again.
        self.git(&["worktree", "prune"])?;
        let folder_text = folder.to_string_lossy();
        if self.has_branch(branch)? {
            self.git(&["worktree", "add", &folder_text, branch])?;
        } else {
            let base = self.base.as_deref().unwrap_or("HEAD");
            self.git(&["worktree", "add", "-b", branch, &folder_text, base])?;
        }
        Ok(true)
    }

    /// How the worktree in `folder` stands; `None` when there is none (yet).
    pub fn status(&self, folder: &Path) -> Result<Option<WorktreeStatus>, WorktreeError> {
        if let Some(link) = &self.remote {
            let folder = folder.to_owned();
            return remote::ask(self, link, WorktreeOp::Status { folder });
        }
        if std::fs::symlink_metadata(folder.join(".git")).is_err() {
            return Ok(None);
        }
        self.check_worktree(folder)?;
        let branch = self.run(folder, &["rev-parse", "--abbrev-ref", "HEAD"])?;
        let changes = self.run(folder, &["status", "--porcelain"])?;
        let last_commit = self.run(folder, &["log", "-1", "--format=%h %s"])?;
        let base = self.base.as_deref().unwrap_or("HEAD");
        let base_commit = self.git(&["rev-parse", base]).ok();
        let commits_ahead = base_commit.and_then(|base| {
            let range = format!("{}..HEAD", base.trim());
            self.run(folder, &["rev-list", "--count", &range])
                .ok()?
                .trim()
                .parse()
                .ok()
        });
        Ok(Some(WorktreeStatus {
            branch: branch.trim().to_owned(),
            changed_files: changes.lines().filter(|l| !l.trim().is_empty()).count(),
            commits_ahead,
            last_commit: last_commit.trim().to_owned(),
        }))
    }

    /// Removes the worktree in `folder`, keeping its branch. Git refuses (and says so) when
    /// it has uncommitted changes.
    pub fn remove(&self, folder: &Path) -> Result<(), WorktreeError> {
        if let Some(link) = &self.remote {
            let folder = folder.to_owned();
            return remote::ask(self, link, WorktreeOp::Remove { folder });
        }
        self.git(&["worktree", "remove", &folder.to_string_lossy()])?;
        Ok(())
    }

    /// The repository's worktrees whose branch starts with the prefix: the conversations'.
    pub fn list(&self) -> Result<Vec<Listed>, WorktreeError> {
        if let Some(link) = &self.remote {
            return remote::ask(self, link, WorktreeOp::List);
        }
        let text = self.git(&["worktree", "list", "--porcelain"])?;
        let mut listed = Vec::new();
        let mut path = None;
        for line in text.lines() {
            if let Some(p) = line.strip_prefix("worktree ") {
                path = Some(PathBuf::from(p));
            } else if let Some(b) = line.strip_prefix("branch refs/heads/")
                && b.starts_with(&self.branch_prefix)
                && let Some(p) = path.take()
            {
                listed.push(Listed {
                    path: p,
                    branch: b.to_owned(),
                });
            }
        }
        Ok(listed)
    }

    /// The folder git keeps the repository's objects, branches and worktree records in:
    /// an agent in a worktree writes there when it commits.
    pub fn git_folder(&self) -> Result<PathBuf, WorktreeError> {
        let dir = self.git(&["rev-parse", "--path-format=absolute", "--git-common-dir"])?;
        Ok(PathBuf::from(dir.trim()))
    }

    fn has_branch(&self, branch: &str) -> Result<bool, WorktreeError> {
        let reference = format!("refs/heads/{branch}");
        let args = ["rev-parse", "--verify", "--quiet", reference.as_str()];
        let output = self
            .command(&self.repository, &args)
            .output()
            .map_err(WorktreeError::NoGit)?;
        Ok(output.status.success())
    }

    /// Makes sure the worktree in `folder` is one of the repository's: its `.git` a plain
    /// file naming a folder inside the repository's git folder (the agent writes the
    /// worktree, so its `.git` could send git to a repository of its own).
    fn check_worktree(&self, folder: &Path) -> Result<(), WorktreeError> {
        let dot_git = folder.join(".git");
        let foreign = || WorktreeError::ForeignGit(dot_git.clone());
        let meta = std::fs::symlink_metadata(&dot_git).map_err(|_| foreign())?;
        if !meta.is_file() {
            return Err(foreign());
        }
        let text = std::fs::read_to_string(&dot_git).map_err(|_| foreign())?;
        let named = text
            .lines()
            .find_map(|l| l.strip_prefix("gitdir:"))
            .map(|p| PathBuf::from(p.trim()))
            .ok_or_else(foreign)?;
        let named = std::fs::canonicalize(folder.join(named)).map_err(|_| foreign())?;
        let common = self.git_folder()?;
        let common = std::fs::canonicalize(&common).unwrap_or(common);
        match named.starts_with(common.join("worktrees")) {
            true => Ok(()),
            false => Err(foreign()),
        }
    }

    fn git(&self, args: &[&str]) -> Result<String, WorktreeError> {
        self.run(&self.repository, args)
    }

    /// Runs `git -C folder args…` as a stranger; its stdout, or its stderr as the error.
    fn run(&self, folder: &Path, args: &[&str]) -> Result<String, WorktreeError> {
        run_git(self.command(folder, args), args)
    }

    /// The command that runs `git -C folder args…`: in the agent's sandbox when there is a
    /// launcher, with hooks and the filesystem monitor off, and only the repository's own
    /// configuration.
    fn command(&self, folder: &Path, args: &[&str]) -> Command {
        let mut full: Vec<String> = GIT_OVERRIDES.iter().map(|a| a.to_string()).collect();
        full.extend(["-C".to_owned(), folder.to_string_lossy().into_owned()]);
        full.extend(args.iter().map(|a| a.to_string()));
        let mut command = match &self.launcher {
            Some(launch) => match launch(folder, &full) {
                Ok(command) => command,
                // Nothing to run: the error shows when the command fails to start.
                Err(e) => {
                    tracing::warn!(error = %e, "git could not be started in the agent's sandbox");
                    Command::new("/nonexistent/sandboxed-git")
                }
            },
            None => {
                let mut command = Command::new("git");
                command.args(&full).env_clear().env(
                    "PATH",
                    std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
                );
                command
            }
        };
        command
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .stdin(std::process::Stdio::null());
        command
    }
}

/// Runs `command` (git with `args`); its stdout, or its stderr as the error.
fn run_git(mut command: Command, args: &[&str]) -> Result<String, WorktreeError> {
    let output = command.output().map_err(WorktreeError::NoGit)?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(WorktreeError::Git {
            command: args.iter().take(2).copied().collect::<Vec<_>>().join(" "),
            message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs git directly, as a person at the repository would.
    fn run_git(folder: &Path, args: &[&str]) -> Result<String, WorktreeError> {
        let mut command = Command::new("git");
        command.arg("-C").arg(folder).args(args);
        super::run_git(command, args)
    }

    /// A repository with one commit, in a fresh temporary folder.
    fn repository() -> (tempfile::TempDir, Worktrees) {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        for args in [
            &["init", "-q", "-b", "main"][..],
            &["config", "user.email", "t@example.org"],
            &["config", "user.name", "T"],
        ] {
            run_git(&repo, args).unwrap();
        }
        std::fs::write(repo.join("README"), "hello\n").unwrap();
        run_git(&repo, &["add", "README"]).unwrap();
        run_git(&repo, &["commit", "-q", "-m", "first"]).unwrap();
        let worktrees = Worktrees {
            repository: repo,
            base: None,
            branch_prefix: "sidekicks/demo/".into(),
            launcher: None,
            remote: None,
        };
        (dir, worktrees)
    }

    #[test]
    fn branch_names_are_valid_and_apart() {
        let w = Worktrees {
            repository: "/r".into(),
            base: None,
            branch_prefix: "sk/".into(),
            launcher: None,
            remote: None,
        };
        assert_eq!(w.branch("Ab3_x-Yz"), "sk/Ab3_x-Yz");
        let dotted = w.branch("a..b");
        assert!(!dotted.contains(".."), "{dotted}");
        assert_ne!(w.branch("a.b"), w.branch("a_b"));
    }

    #[test]
    fn a_conversation_gets_a_worktree_on_its_own_branch_kept_after_removal() {
        let (dir, w) = repository();
        let folder = dir.path().join("work/room-a");
        assert!(w.status(&folder).unwrap().is_none());
        assert!(w.ensure(&folder, "sidekicks/demo/a").unwrap(), "made now");
        assert!(folder.join("README").exists());
        assert!(
            !w.ensure(&folder, "sidekicks/demo/a").unwrap(),
            "made before"
        );

        // A commit on the branch, then an uncommitted file.
        std::fs::write(folder.join("new.txt"), "x\n").unwrap();
        run_git(&folder, &["add", "new.txt"]).unwrap();
        run_git(&folder, &["commit", "-q", "-m", "add new"]).unwrap();
        std::fs::write(folder.join("draft.txt"), "y\n").unwrap();
        let status = w.status(&folder).unwrap().unwrap();
        assert_eq!(status.branch, "sidekicks/demo/a");
        assert_eq!(status.changed_files, 1);
        assert_eq!(status.commits_ahead, Some(1));
        assert!(status.last_commit.ends_with("add new"), "{status:?}");
        assert_eq!(w.list().unwrap().len(), 1);

        // Uncommitted work is never thrown away.
        let refused = w.remove(&folder).unwrap_err().to_string();
        assert!(refused.contains("worktree remove"), "{refused}");
        assert!(folder.join("draft.txt").exists());
        std::fs::remove_file(folder.join("draft.txt")).unwrap();
        w.remove(&folder).unwrap();
        assert!(!folder.exists());
        assert!(w.list().unwrap().is_empty());

        // Made again from the branch: the commit is still there.
        assert!(w.ensure(&folder, "sidekicks/demo/a").unwrap());
        assert!(folder.join("new.txt").exists());
    }

    #[test]
    fn a_folder_deleted_by_hand_is_made_again_and_a_stranger_folder_is_left_alone() {
        let (dir, w) = repository();
        let folder = dir.path().join("work/room-b");
        w.ensure(&folder, "sidekicks/demo/b").unwrap();
        std::fs::remove_dir_all(&folder).unwrap();
        assert!(w.ensure(&folder, "sidekicks/demo/b").unwrap());

        let other = dir.path().join("work/room-c");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("mine.txt"), "keep").unwrap();
        let err = w.ensure(&other, "sidekicks/demo/c").unwrap_err();
        assert!(matches!(err, WorktreeError::NotAWorktree(_)), "{err}");
        assert!(other.join("mine.txt").exists());
    }

    #[test]
    fn the_git_folder_is_the_repositorys() {
        let (_dir, w) = repository();
        let git = w.git_folder().unwrap();
        assert_eq!(git, w.repository.canonicalize().unwrap().join(".git"));
    }

    #[test]
    fn the_agents_hooks_and_fsmonitor_never_run_and_a_foreign_git_is_refused() {
        let (dir, w) = repository();
        let marker = dir.path().join("ran");
        // What an agent in a worktree may write: the repository's hooks and config.
        let hook = format!("#!/bin/sh\ntouch {}\n", marker.display());
        let hooks = w.repository.join(".git/hooks");
        std::fs::create_dir_all(&hooks).unwrap();
        for name in ["post-checkout", "fsmonitor"] {
            std::fs::write(hooks.join(name), &hook).unwrap();
            let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
            std::fs::set_permissions(hooks.join(name), mode).unwrap();
        }
        let fsmonitor = hooks.join("fsmonitor").display().to_string();
        run_git(&w.repository, &["config", "core.fsmonitor", &fsmonitor]).unwrap();
        let folder = dir.path().join("work/room-d");
        w.ensure(&folder, "sidekicks/demo/d").unwrap();
        w.status(&folder).unwrap().unwrap();
        assert!(!marker.exists(), "a hook or the fsmonitor ran");
        // Run directly, git would have run them: the test sees what it guards against.
        run_git(&folder, &["status"]).unwrap();
        assert!(
            marker.exists(),
            "git runs the fsmonitor when not told otherwise"
        );

        // A worktree whose `.git` names a repository of the agent's own is refused.
        std::fs::remove_file(&marker).unwrap();
        let elsewhere = dir.path().join("evil");
        std::fs::create_dir(&elsewhere).unwrap();
        run_git(&elsewhere, &["init", "-q"]).unwrap();
        std::fs::write(
            folder.join(".git"),
            format!("gitdir: {}\n", elsewhere.join(".git").display()),
        )
        .unwrap();
        let refused = w.status(&folder).unwrap_err();
        assert!(matches!(refused, WorktreeError::ForeignGit(_)), "{refused}");
        assert!(matches!(
            w.ensure(&folder, "sidekicks/demo/d"),
            Err(WorktreeError::ForeignGit(_))
        ));
    }
}
