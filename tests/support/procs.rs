//! This machine's processes as the tests see them in `/proc`: whether what a test started
//! (through an agent, in a container or on a "remote" host that is this machine) still runs.

use std::path::Path;

/// How many live processes (zombies left out: they run nothing) have a command line that
/// holds `text`.
pub fn running(text: &str) -> usize {
    command_lines().filter(|line| line.contains(text)).count()
}

/// How many live processes run exactly `command_line` (its words joined by spaces): the
/// command itself, not a launcher whose arguments mention it (an engine's `exec` client
/// holds the whole script before anything of it runs).
pub fn running_as(command_line: &str) -> usize {
    command_lines()
        .filter(|line| line.trim_end() == command_line)
        .count()
}

/// The command lines of the live processes, their words joined by spaces.
fn command_lines() -> impl Iterator<Item = String> {
    let procs = std::fs::read_dir("/proc").unwrap();
    procs.filter_map(|e| {
        let dir = e.ok()?.path();
        let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
        let line = std::fs::read(dir.join("cmdline")).ok()?;
        (!stat.contains(") Z")).then(|| String::from_utf8_lossy(&line).replace('\0', " "))
    })
}

/// How many processes work in a folder below `folder`.
pub fn working_in(folder: &Path) -> usize {
    let procs = std::fs::read_dir("/proc").unwrap();
    (procs.filter_map(|e| std::fs::read_link(e.ok()?.path().join("cwd")).ok()))
        .filter(|cwd| cwd.starts_with(folder))
        .count()
}
