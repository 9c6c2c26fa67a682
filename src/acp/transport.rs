//! The agent's stdin/stdout as the SDK's line transport, with a guard on what the agent
//! writes. ACP is one JSON-RPC message per line; anything else on stdout (a banner, a
//! debug print, a crash dump) is not for us. The SDK would answer such a line with a parse
//! error and carry on, so an agent that only writes garbage would leave a turn waiting
//! forever. The guard drops these lines, logs them (masked), and once there were
//! [`MAX_STRAY_LINES`] of them declares the agent broken, which stops it.

use futures::StreamExt as _;
use tokio::io::AsyncWriteExt as _;
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::watch;

use super::lines::CappedLines;
use crate::model::ids::AgentId;

/// Lines that are not JSON-RPC an agent may write before it is stopped: a stray banner or
/// two is forgiven, a stream of them is not.
pub const MAX_STRAY_LINES: usize = 3;
/// Characters of a stray line kept for the log and the error.
const SHOWN_CHARS: usize = 80;
/// Longest line an agent may write to stdout: one JSON-RPC message. Room enough for a
/// replayed session or a tool call carrying a file; past it the agent is stopped, and the
/// line is never held in memory whole.
pub const MAX_STDOUT_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Counts an agent's stray stdout lines and says when it broke the protocol.
pub struct Guard {
    /// The agent, for logs.
    agent_id: AgentId,
    /// Values masked before a line is logged.
    secrets: Vec<String>,
    /// Stray lines so far.
    stray: usize,
    /// Set (once) to why the agent is considered broken.
    broken: watch::Sender<Option<String>>,
}

impl Guard {
    /// A guard reporting on `broken`.
    pub fn new(
        agent_id: AgentId,
        secrets: Vec<String>,
        broken: watch::Sender<Option<String>>,
    ) -> Self {
        Self {
            agent_id,
            secrets,
            stray: 0,
            broken,
        }
    }

    /// Whether `line` goes on to the SDK. A blank line is skipped quietly; a line that is
    /// not a JSON object is counted, logged and dropped.
    pub fn admit(&mut self, line: &str) -> bool {
        if line.trim().is_empty() {
            return false;
        }
        if is_json_object(line) {
            return true;
        }
        self.stray += 1;
        let shown = shorten(&super::process::redact(line.to_owned(), &self.secrets));
        tracing::warn!(agent = %self.agent_id, line = %shown, count = self.stray, "the agent wrote a line that is not JSON-RPC to stdout");
        if self.stray == MAX_STRAY_LINES {
            let reason = format!(
                "it wrote {MAX_STRAY_LINES} lines that are not ACP to its stdout (the last: `{shown}`)"
            );
            tracing::error!(agent = %self.agent_id, "{reason}; stopping it");
            declare_broken(&self.broken, reason);
        }
        false
    }

    /// The agent's stdout could not be read as lines of text (invalid UTF-8), or a line was
    /// longer than one message may be: it is broken at once, as nothing after it can be
    /// trusted to be framed.
    pub fn unreadable(&mut self, error: &std::io::Error) {
        let reason = match error.kind() {
            std::io::ErrorKind::InvalidInput => format!("it wrote {error} to its stdout"),
            _ => format!("its stdout is not text ({error})"),
        };
        tracing::error!(agent = %self.agent_id, "{reason}; stopping it");
        declare_broken(&self.broken, reason);
    }
}

/// Records why the agent is broken, unless an earlier reason was recorded (the first cause
/// is the one worth telling).
pub fn declare_broken(broken: &watch::Sender<Option<String>>, reason: String) {
    broken.send_if_modified(|current| {
        let first = current.is_none();
        if first {
            *current = Some(reason);
        }
        first
    });
}

fn is_json_object(line: &str) -> bool {
    let trimmed = line.trim_start();
    trimmed.starts_with('{')
        && serde_json::from_str::<serde_json::Value>(trimmed).is_ok_and(|v| v.is_object())
}

fn shorten(line: &str) -> String {
    let mut chars = line.trim().chars();
    let mut out: String = chars.by_ref().take(SHOWN_CHARS).collect();
    if chars.next().is_some() {
        out.push('…');
    }
    out
}

/// The agent's stdout as lines of text, each at most [`MAX_STDOUT_LINE_BYTES`]: a longer
/// line, or one that is not UTF-8, is an error (the guard then stops the agent).
fn stdout_lines(stdout: ChildStdout) -> impl futures::Stream<Item = std::io::Result<String>> {
    let lines = CappedLines::new(tokio::io::BufReader::new(stdout), MAX_STDOUT_LINE_BYTES);
    futures::stream::unfold(lines, |mut lines| async move {
        let item = match lines.next_line().await {
            Ok(None) => return None,
            Ok(Some(line)) if line.dropped > 0 => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "a line of {} bytes, more than the {} MiB one ACP message may take",
                    line.bytes.len() + line.dropped,
                    MAX_STDOUT_LINE_BYTES / (1024 * 1024)
                ),
            )),
            Ok(Some(line)) => String::from_utf8(line.bytes).map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "stream did not contain valid UTF-8",
                )
            }),
            Err(e) => Err(e),
        };
        Some((item, lines))
    })
}

/// The SDK transport over the agent's pipes, with `guard` on every line it writes.
pub fn lines(
    stdin: ChildStdin,
    stdout: ChildStdout,
    mut guard: Guard,
) -> agent_client_protocol::Lines<
    impl futures::Sink<String, Error = std::io::Error> + Send + 'static,
    impl futures::Stream<Item = std::io::Result<String>> + Send + 'static,
> {
    let incoming = stdout_lines(stdout)
        .filter(move |line| {
            let keep = match line {
                Ok(line) => guard.admit(line),
                Err(e) => {
                    guard.unreadable(e);
                    true
                }
            };
            futures::future::ready(keep)
        })
        .boxed();
    let outgoing = futures::sink::unfold(stdin, async |mut stdin, line: String| {
        stdin.write_all(line.as_bytes()).await?;
        stdin.write_all(b"\n").await?;
        stdin.flush().await?;
        Ok::<_, std::io::Error>(stdin)
    });
    agent_client_protocol::Lines::new(Box::pin(outgoing), incoming)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_lines_pass_and_the_third_stray_line_breaks_the_agent() {
        let (tx, rx) = watch::channel(None);
        let mut guard = Guard::new("a".into(), vec!["sk-secret-1".into()], tx);
        let table = [
            (
                r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#,
                true,
            ),
            ("", false),
            ("Loading model…", false),
            ("[1, 2]", false),
            (r#"  {"jsonrpc":"2.0","id":1,"result":{}}"#, true),
        ];
        for (line, admitted) in table {
            assert_eq!(guard.admit(line), admitted, "{line:?}");
        }
        assert!(rx.borrow().is_none(), "two stray lines are forgiven");
        assert!(!guard.admit("{not json, and key sk-secret-1"));
        let reason = rx.borrow().clone().expect("broken at the third");
        assert!(reason.contains("3 lines that are not ACP"), "{reason}");
        assert!(
            reason.contains("`{not json, and key [redacted]`"),
            "{reason}"
        );
    }

    #[test]
    fn stdout_that_is_not_text_breaks_the_agent_at_once() {
        let (tx, rx) = watch::channel(None);
        let mut guard = Guard::new("a".into(), vec![], tx);
        let error = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        );
        guard.unreadable(&error);
        let reason = rx.borrow().clone().expect("broken");
        assert!(reason.starts_with("its stdout is not text"), "{reason}");
        let (tx, rx) = watch::channel(None);
        let mut guard = Guard::new("a".into(), vec![], tx);
        guard.unreadable(&std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a line of 20000000 bytes, more than the 16 MiB one ACP message may take",
        ));
        let reason = rx.borrow().clone().expect("broken");
        assert!(
            reason.starts_with("it wrote a line of 20000000 bytes"),
            "{reason}"
        );
    }

    #[test]
    fn a_long_stray_line_is_shortened() {
        let long = "x".repeat(200);
        let shown = shorten(&long);
        assert_eq!(shown.chars().count(), SHOWN_CHARS + 1);
        assert!(shown.ends_with('…'));
    }
}
