//! The `%` lines of a test's script (`docs/demo-agent.md`), one small handler per family:
//! what the agent reports, its tool calls and permission questions, its files, and the
//! faults it plays. Each handler answers `Ok(None)` to go on with the next line, or the
//! reason that ends the turn there.

use std::io::Write as _;

use agent_client_protocol::v1::schema::{
    CompactionId, CompactionStatus, CompactionUpdate, ContentChunk, Cost, ReadTextFileRequest,
    SessionInfoUpdate, SessionUpdate, StopReason, ToolCall, ToolCallContent, ToolCallStatus,
    ToolCallUpdateFields, ToolKind, Usage, UsageUpdate, WriteTextFileRequest,
};

use super::super::{content, write_raw_stdout};
use super::{Ask, Turn, TurnResult, edit, execute};

/// After one line: `None` goes on, `Some` ends the turn with that reason.
type Step = Result<Option<StopReason>, agent_client_protocol::Error>;

/// Goes on with the next line.
const ON: Step = Ok(None);

/// One `%` line: its word, the rest of the line, and the prompt after it (`%stream`).
struct Line<'a> {
    word: &'a str,
    arg: &'a str,
    /// The whole prompt (`%echo`).
    text: &'a str,
    /// The prompt after this line (`%stream`).
    rest: &'a str,
}

impl Line<'_> {
    /// The `n`th number of the line's arguments, or `default`.
    fn num(&self, n: usize, default: u64) -> u64 {
        (self.arg.split_whitespace().nth(n))
            .and_then(|a| a.parse().ok())
            .unwrap_or(default)
    }
}

impl Turn {
    /// Runs every `%` line of `text` in order; other lines are not read.
    pub(super) async fn run_script(&self, text: &str) -> TurnResult {
        // Each line with the byte offset where the next one starts, so `%stream` can take
        // the rest of the prompt exactly as sent.
        let mut offset = 0;
        for raw in text.split_inclusive('\n') {
            offset += raw.len();
            let Some(directive) = raw.trim_end_matches(['\n', '\r']).strip_prefix('%') else {
                continue;
            };
            let (word, arg) = directive.split_once(' ').unwrap_or((directive, ""));
            let line = Line {
                word,
                arg,
                text,
                rest: &text[offset..],
            };
            if let Some(reason) = self.directive(&line).await? {
                return Ok(reason);
            }
            if self.cancelled() {
                return Ok(StopReason::Cancelled);
            }
        }
        Ok(StopReason::EndTurn)
    }

    async fn directive(&self, line: &Line<'_>) -> Step {
        let word = line.word;
        if word.starts_with("permission") {
            return self.permission_line(line).await;
        }
        if word.starts_with("fs-") || matches!(word, "read" | "write") {
            return self.file_line(line).await;
        }
        if word.starts_with("ask-") && self.ask(word, line.arg).await? {
            return ON;
        }
        match word {
            "stream" | "sleep" | "hang" | "hang-error" | "error" | "crash" | "stop" => {
                self.timing_line(line).await
            }
            "stderr" | "stderr-binary" | "stderr-flood" | "binary" | "garbage" => {
                self.garbage_line(line).await
            }
            "tool" | "tool-open" | "tool-long" | "terminal" | "mode" | "allow-all"
            | "background" => self.tool_line(line).await,
            _ => self.report_line(line).await,
        }
    }

    /// What the agent says and shows: text, thoughts, plans, usage, what it knows.
    async fn report_line(&self, line: &Line<'_>) -> Step {
        let arg = line.arg;
        match line.word {
            "say" => self.say(arg)?,
            "echo" => self.say(line.text)?,
            "think" => self.think(arg)?,
            "plan" => self.plan(&arg.split(';').map(str::trim).collect::<Vec<_>>(), 1)?,
            "tokens" => {
                let (input, output) = (line.num(0, 0), line.num(1, 0));
                *self.tokens.lock().unwrap() = Some(Usage::new(input + output, input, output));
            }
            "usage" => self.usage(line)?,
            "compact" => self.compact(arg)?,
            "title" => self.update(SessionUpdate::SessionInfoUpdate(
                SessionInfoUpdate::new().title(arg.to_owned()),
            ))?,
            "unknown-update" => self.unknown_update()?,
            "image" => self.update(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                content::dot_image(),
            )))?,
            "link" => self.update(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                content::link(&self.cwd, arg.trim()),
            )))?,
            "mcp-call" => self.say(&super::super::mcp_call::call(&self.mcp, arg).await)?,
            word => self.say(&self.known(word))?,
        }
        ON
    }

    /// What the agent knows of itself and its client, said as text (`%client`, `%mcp`,
    /// `%history`…); an unknown word is said as unknown.
    fn known(&self, word: &str) -> String {
        match word {
            "client" => format!("{}\n", self.client),
            "open-sessions" => format!("open sessions: {}\n", self.open_sessions),
            "blocks" => (self.blocks.iter())
                .map(|b| format!("block: {b}\n"))
                .collect(),
            "mcp" => {
                let lines: String = (self.mcp.iter())
                    .map(|l| format!("{}\n", content::describe_mcp(l)))
                    .collect();
                if lines.is_empty() {
                    "mcp: none\n".into()
                } else {
                    lines
                }
            }
            "pwd" => {
                let home = std::env::var("HOME").unwrap_or_default();
                format!("folder: {}\nhome: {home}\n", self.cwd.display())
            }
            "settings" => format!("mode: {}, model: {}", self.settings.0, self.settings.1),
            "history" => {
                let mut listing = format!("{} earlier prompts", self.earlier.len());
                for exchange in &self.earlier {
                    listing.push_str(&format!("\n- {}", exchange.prompt.replace('\n', " ")));
                }
                listing
            }
            "now" => {
                let micros = (std::time::SystemTime::now())
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_micros();
                format!("{micros}\n")
            }
            other => format!("(unknown instruction %{other})"),
        }
    }

    /// `%compact ID STATE [ERROR]`: a report of a summary of the context (`compaction_update`,
    /// STATE `in_progress`, `completed`, `failed` or `cancelled`), where the client asked to
    /// be told of them.
    fn compact(&self, arg: &str) -> Result<(), agent_client_protocol::Error> {
        if !self.client.contains("compaction: yes") {
            return self.say("compaction not offered\n");
        }
        let mut words = arg.splitn(3, ' ');
        let (id, state) = (words.next().unwrap_or("c1"), words.next().unwrap_or(""));
        let status = match state {
            "completed" => CompactionStatus::Completed,
            "failed" => CompactionStatus::Failed,
            "cancelled" => CompactionStatus::Cancelled,
            _ => CompactionStatus::InProgress,
        };
        let mut update = CompactionUpdate::new(CompactionId::new(id), status);
        if let Some(error) = words.next() {
            update = update.error(error.to_owned());
        }
        self.update(SessionUpdate::CompactionUpdate(update))
    }

    /// `%usage USED SIZE [AMOUNT CURRENCY]`: the context window's use, and the cost.
    fn usage(&self, line: &Line<'_>) -> Result<(), agent_client_protocol::Error> {
        let (used, size) = (line.num(0, 0), line.num(1, 0));
        let mut rest = line.arg.split_whitespace().skip(2);
        let cost = match (rest.next().and_then(|a| a.parse().ok()), rest.next()) {
            (Some(amount), Some(currency)) => Some(Cost::new(amount, currency)),
            _ => None,
        };
        self.update(SessionUpdate::UsageUpdate(
            UsageUpdate::new(used, size).cost(cost),
        ))
    }

    /// Tool calls that run without asking, commands, and switches the agent flips itself.
    async fn tool_line(&self, line: &Line<'_>) -> Step {
        let arg = line.arg;
        match line.word {
            "tool" => self.tool(arg).await?,
            "tool-open" => self.update(SessionUpdate::ToolCall(
                ToolCall::new(self.tool_id(), arg)
                    .kind(ToolKind::Execute)
                    .status(ToolCallStatus::InProgress),
            ))?,
            "tool-long" => self.tool_long(line.num(0, 100)).await?,
            "terminal" => {
                if self.terminal(arg).await? == StopReason::Cancelled {
                    return Ok(Some(StopReason::Cancelled));
                }
            }
            "mode" => {
                self.switch_mode(arg.trim())?;
                self.say(&format!("mode: {}\n", arg.trim()))?;
            }
            "allow-all" => self.allow_all(arg)?,
            _ => self.background(arg)?,
        }
        ON
    }

    /// `%tool-long N`: a call whose output is `N` lines.
    async fn tool_long(&self, lines: u64) -> Result<(), agent_client_protocol::Error> {
        let id = self.tool_id();
        let output: String = (1..=lines).map(|n| format!("line {n}\n")).collect();
        self.update(SessionUpdate::ToolCall(
            ToolCall::new(id.clone(), "long output")
                .kind(ToolKind::Execute)
                .status(ToolCallStatus::InProgress),
        ))?;
        self.pause(100).await;
        let done = ToolCallUpdateFields::new().status(ToolCallStatus::Completed);
        self.set_status(&id, done.content(vec![output.into()]))
    }

    /// The permission questions, placed as each real agent places them.
    async fn permission_line(&self, line: &Line<'_>) -> Step {
        let arg = line.arg;
        if line.word == "permission-switch" {
            let trimmed = arg.trim();
            let (mode, title) = trimmed.split_once(' ').unwrap_or((trimmed, "bash: ls"));
            let call = execute(&self.tool_id(), title);
            self.permission_switching(call, mode).await?;
            return ON;
        }
        let (ask, call) = match line.word {
            "permission" | "permission-abort" => {
                (Ask::AfterAnnouncing, execute(&self.tool_id(), arg))
            }
            "permission-edit" => (Ask::AfterAnnouncing, edit(&self.tool_id(), arg)),
            "permission-early" => (Ask::BeforeAnnouncing, execute(&self.tool_id(), arg)),
            "permission-running" => (Ask::WhileRunning, execute(&self.tool_id(), arg)),
            "permission-unannounced" => (Ask::Unannounced, execute(&self.tool_id(), arg)),
            // As Codex does: asks first, with its approval prompt as the call's content.
            "permission-codex" => {
                let prompt = format!(
                    "Proposed Amendment: [\"{arg}\"]\nAvailable Decisions: Approved ApprovedExecpolicyAmendment Abort"
                );
                let call =
                    execute(&self.tool_id(), arg).content(vec![ToolCallContent::from(prompt)]);
                (Ask::BeforeAnnouncing, call)
            }
            other => {
                self.say(&format!("(unknown instruction %{other})"))?;
                return ON;
            }
        };
        let chosen = self.permission(call, ask).await?;
        // As Codex does with its `abort` option: a refusal ends the turn as `cancelled`,
        // though the client asked for no cancel.
        let refused = chosen == "reject" || chosen == "never";
        Ok((line.word == "permission-abort" && refused).then_some(StopReason::Cancelled))
    }

    /// Files: read and written by the agent itself (`%read`, `%write`), or through the
    /// client (`%fs-read`, `%fs-write`, `%fs-edit`).
    async fn file_line(&self, line: &Line<'_>) -> Step {
        let arg = line.arg;
        let (name, body) = arg.split_once(' ').unwrap_or((arg, ""));
        let said = match line.word {
            "read" => read_here(&self.cwd, arg.trim()),
            "write" => match std::fs::write(self.cwd.join(name), body) {
                Ok(()) => format!("wrote {name}\n"),
                Err(e) => format!("cannot write {name}: {e}\n"),
            },
            "fs-read" => {
                let path = self.cwd.join(arg.trim());
                let request = ReadTextFileRequest::new(self.session.clone(), path);
                match self.cx.send_request(request).block_task().await {
                    Ok(r) => format!(
                        "fs read {}: {} chars: {}\n",
                        arg.trim(),
                        r.content.chars().count(),
                        r.content.lines().next().unwrap_or_default()
                    ),
                    Err(e) => format!("fs refused {}: {}\n", arg.trim(), content::why(e)),
                }
            }
            "fs-write" => {
                let request =
                    WriteTextFileRequest::new(self.session.clone(), self.cwd.join(name), body);
                match self.cx.send_request(request).block_task().await {
                    Ok(_) => format!("fs wrote {name}\n"),
                    Err(e) => format!("fs refused {name}: {}\n", content::why(e)),
                }
            }
            "fs-edit" => {
                self.fs_edit(name, body).await?;
                return ON;
            }
            other => format!("(unknown instruction %{other})"),
        };
        self.say(&said)?;
        ON
    }

    /// `%fs-edit NAME TEXT`, as agents that edit through their client do: an edit call in
    /// progress, the write, then the call completed (its diff is the client's to show).
    async fn fs_edit(&self, name: &str, body: &str) -> Result<(), agent_client_protocol::Error> {
        let id = self.tool_id();
        self.update(SessionUpdate::ToolCall(
            ToolCall::new(id.clone(), format!("Edit {name}"))
                .kind(ToolKind::Edit)
                .status(ToolCallStatus::InProgress),
        ))?;
        let request = WriteTextFileRequest::new(self.session.clone(), self.cwd.join(name), body);
        self.cx.send_request(request).block_task().await?;
        self.set_status(
            &id,
            ToolCallUpdateFields::new().status(ToolCallStatus::Completed),
        )
    }

    /// How and when the turn ends: streamed, slow, hung, failed, crashed, stopped.
    async fn timing_line(&self, line: &Line<'_>) -> Step {
        let reason = match line.word {
            "stream" => {
                let (ms, size) = (line.num(0, 50), line.num(1, 20).max(1) as usize);
                return self.stream(line.rest, ms, size).await.map(Some);
            }
            "sleep" => match self.pause(line.num(0, 100)).await {
                true => StopReason::Cancelled,
                false => return ON,
            },
            "hang" => {
                while !self.pause(60_000).await {}
                StopReason::Cancelled
            }
            "hang-error" => {
                while !self.pause(60_000).await {}
                let aborted = "Request was aborted.".to_owned();
                return Err(agent_client_protocol::Error::new(-32603, aborted));
            }
            "error" => {
                return Err(agent_client_protocol::Error::new(
                    -32603,
                    line.arg.to_owned(),
                ));
            }
            "crash" => {
                eprintln!("demo agent: crashing as asked");
                std::process::exit(line.num(0, 3) as i32);
            }
            _ => match line.arg.trim() {
                "max_tokens" => StopReason::MaxTokens,
                "max_turn_requests" => StopReason::MaxTurnRequests,
                "refusal" => StopReason::Refusal,
                "cancelled" => StopReason::Cancelled,
                _ => StopReason::EndTurn,
            },
        };
        Ok(Some(reason))
    }

    /// What a broken agent writes: on stderr, and on stdout where the protocol is.
    async fn garbage_line(&self, line: &Line<'_>) -> Step {
        let stderr = |bytes: &[u8]| {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(bytes);
            let _ = err.flush();
        };
        match line.word {
            "stderr" => eprintln!("{}", line.arg),
            "stderr-binary" => stderr(b"demo agent: \xff\xfe not text \xc3\n"),
            "stderr-flood" => {
                stderr(format!("{}\n", "x".repeat(line.num(0, 1_000) as usize)).as_bytes())
            }
            "binary" => write_raw_stdout(b"\xff\xfe not text\n".to_vec()).await,
            _ => {
                let lines: String = (0..line.num(0, 1))
                    .map(|i| format!("demo agent: this line {i} is not JSON-RPC\n"))
                    .collect();
                write_raw_stdout(lines.into_bytes()).await;
            }
        }
        ON
    }

    async fn stream(&self, text: &str, ms: u64, size: usize) -> TurnResult {
        let chars: Vec<char> = text.chars().collect();
        for chunk in chars.chunks(size) {
            if self.pause(ms).await {
                return Ok(StopReason::Cancelled);
            }
            self.say(&chunk.iter().collect::<String>())?;
        }
        Ok(StopReason::EndTurn)
    }
}

/// `%read NAME`: what the agent itself finds at `NAME` in its folder.
fn read_here(cwd: &std::path::Path, name: &str) -> String {
    let path = cwd.join(name);
    let outcome = match std::fs::metadata(&path) {
        Ok(meta) if meta.is_dir() => std::fs::read_dir(&path)
            .map(|entries| format!("a folder of {} entries", entries.count())),
        _ => std::fs::read(&path).map(|bytes| format!("{} bytes", bytes.len())),
    };
    match outcome {
        Ok(what) => format!("read {name}: {what}\n"),
        Err(e) => format!("cannot read {name}: {e}\n"),
    }
}
