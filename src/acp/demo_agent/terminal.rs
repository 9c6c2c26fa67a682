//! The demo agent's `%terminal`: a command run through the client's terminal, shown in a tool
//! call that embeds it, as agents that delegate commands to their client do.

use super::content::why;
use super::turn::{Turn, TurnResult};

use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, EnvVariable, ReleaseTerminalRequest, SessionUpdate, StopReason,
    Terminal, TerminalOutputRequest, ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, ToolKind, WaitForTerminalExitRequest,
};

/// What `%terminal` was asked to run.
#[derive(Debug, Default, PartialEq)]
struct Asked {
    /// `--limit N`: the output byte limit.
    limit: Option<u64>,
    /// `--cwd DIR`: the folder (relative to the session's, or absolute).
    cwd: Option<String>,
    /// `--env NAME=VALUE`, any number (`\n` in NAME stands for a line break).
    env: Vec<(String, String)>,
    /// The rest: a shell script (`sh -c`).
    script: String,
}

fn parse(arg: &str) -> Asked {
    let mut asked = Asked::default();
    let mut rest = arg.trim_start();
    loop {
        let (word, after) = rest.split_once(' ').unwrap_or((rest, ""));
        let after = after.trim_start();
        let (value, after_value) = after.split_once(' ').unwrap_or((after, ""));
        match word {
            "--limit" => asked.limit = value.parse().ok(),
            "--cwd" => asked.cwd = Some(value.to_owned()),
            "--env" => {
                // `\n` in a name is a line break: a hostile agent's name, for the tests.
                if let Some((k, v)) = value.split_once('=') {
                    asked.env.push((k.replace("\\n", "\n"), v.to_owned()));
                }
            }
            _ => break,
        }
        rest = after_value.trim_start();
    }
    asked.script = rest.to_owned();
    asked
}

impl Turn {
    /// `%terminal [--limit N] [--cwd DIR] [--env K=V]… SCRIPT`: runs `sh -c SCRIPT` through
    /// the client, in a tool call that embeds the terminal, and says how it ended and what
    /// it printed. When the turn is stopped meanwhile, it tries to start another command and
    /// writes what the client said to `terminal-after-stop.txt` in the session's folder.
    pub(super) async fn terminal(&self, arg: &str) -> TurnResult {
        let asked = parse(arg);
        if !self.client.contains("terminal: yes") {
            self.say("terminal not offered\n")?;
            return Ok(StopReason::EndTurn);
        }
        let mut request = CreateTerminalRequest::new(self.session.clone(), "sh");
        request.args = vec!["-c".into(), asked.script.clone()];
        request.env = asked
            .env
            .iter()
            .map(|(k, v)| EnvVariable::new(k.clone(), v.clone()))
            .collect();
        request.cwd = asked.cwd.as_ref().map(|c| self.cwd.join(c));
        request.output_byte_limit = asked.limit;
        let id = match self.cx.send_request(request).block_task().await {
            Ok(created) => created.terminal_id,
            Err(e) => {
                self.say(&format!("terminal refused: {}\n", why(e)))?;
                return Ok(StopReason::EndTurn);
            }
        };
        let call = self.tool_id();
        self.update(SessionUpdate::ToolCall(
            ToolCall::new(call.clone(), format!("terminal: {}", asked.script))
                .kind(ToolKind::Execute)
                .status(ToolCallStatus::InProgress)
                .raw_input(serde_json::json!({ "command": asked.script }))
                .content(vec![ToolCallContent::Terminal(Terminal::new(id.clone()))]),
        ))?;
        let wait = WaitForTerminalExitRequest::new(self.session.clone(), id.clone());
        let exited = self.cx.send_request(wait).block_task();
        let notified = self.cancel.notify.notified();
        let exit = tokio::select! {
            exit = exited => Some(exit?),
            _ = notified => None,
        };
        // Killed by a signal: the client stops a turn's commands before it says
        // `session/cancel`, so the exit may come first.
        let killed = (exit.as_ref()).is_some_and(|e| e.exit_status.signal.is_some());
        if exit.is_none() || killed || self.cancelled() {
            // Stopped: the client killed the command; a new one must be refused.
            let again = CreateTerminalRequest::new(self.session.clone(), "true");
            let said = match self.cx.send_request(again).block_task().await {
                Ok(_) => "started".to_owned(),
                Err(e) => format!("refused: {}", why(e)),
            };
            let _ = std::fs::write(self.cwd.join("terminal-after-stop.txt"), said);
            return Ok(StopReason::Cancelled);
        }
        let output = TerminalOutputRequest::new(self.session.clone(), id.clone());
        let output = self.cx.send_request(output).block_task().await?;
        let release = ReleaseTerminalRequest::new(self.session.clone(), id);
        self.cx.send_request(release).block_task().await?;
        let status = output.exit_status.unwrap_or_default();
        let ok = status.exit_code == Some(0);
        self.update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call,
            ToolCallUpdateFields::new().status(if ok {
                ToolCallStatus::Completed
            } else {
                ToolCallStatus::Failed
            }),
        )))?;
        let code = status.exit_code.map_or("none".into(), |c| c.to_string());
        let signal = status.signal.unwrap_or_else(|| "none".into());
        self.say(&format!(
            "terminal exit {code}, signal {signal}, truncated {}, {} bytes:\n\n```\n{}\n```\n",
            output.truncated,
            output.output.len(),
            output.output.trim_end()
        ))?;
        Ok(StopReason::EndTurn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_come_before_the_script() {
        let asked = parse("--limit 10 --cwd sub --env A=1 --env B=x=y echo $A --limit");
        assert_eq!(
            asked,
            Asked {
                limit: Some(10),
                cwd: Some("sub".into()),
                env: vec![("A".into(), "1".into()), ("B".into(), "x=y".into())],
                script: "echo $A --limit".into(),
            }
        );
        assert_eq!(parse("ls -l").script, "ls -l");
    }
}
