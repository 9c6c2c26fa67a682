//! How the agent's work looks in the room: tool cards, the plan, the thinking indicator,
//! permission polls and the usage line. Pure functions from core state to [`OutMessage`]s,
//! each with a plain body for every client and HTML for those that format.

use std::fmt::Write as _;
use std::time::Duration;

use crate::model::OutMessage;
use crate::model::agent::{
    Cost, PlanEntry, PlanStatus, TokenUsage, ToolCallFields, ToolContent, ToolKind, ToolStatus,
};
use crate::model::poll::Choice;
use crate::render::strings;

/// A poll's diff longer than this many lines is folded (`<details>`), shown whole.
const POLL_DIFF_LINES: usize = 20;
/// At most this many bytes of diff in a poll, its plain and HTML copies counted together,
/// so the event stays under the homeserver's 64 KiB limit.
const POLL_DIFF_BYTES: usize = 40_000;
/// At most this many lines of a diff or output in a tool card.
const CARD_EXCERPT_LINES: usize = 8;
/// Raw input longer than this is cut when summarised.
const RAW_INPUT_CHARS: usize = 300;
/// Thoughts longer than this are cut in the folded indicator.
const THOUGHT_CHARS: usize = 4000;

/// Where a tool card stands, including the two ends only the gateway can declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardStatus {
    /// What the agent last reported.
    Reported(ToolStatus),
    /// The turn was cancelled while the call was still open.
    Cancelled,
    /// The turn ended without the agent saying how the call ended.
    Unknown,
}

impl CardStatus {
    fn icon_and_word(self) -> (&'static str, &'static str) {
        match self {
            CardStatus::Reported(ToolStatus::Pending) => ("🕓", "pending"),
            CardStatus::Reported(ToolStatus::InProgress) => ("🔄", "in progress"),
            CardStatus::Reported(ToolStatus::Completed) => ("✅", "completed"),
            CardStatus::Reported(ToolStatus::Failed) => ("❌", "failed"),
            CardStatus::Reported(ToolStatus::Cancelled) => ("⏹️", "cancelled"),
            CardStatus::Cancelled => ("⏹️", "cancelled"),
            CardStatus::Unknown => ("❔", "ended without a status"),
        }
    }
}

fn kind_icon(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::Read => "📖",
        ToolKind::Edit => "✏️",
        ToolKind::Delete => "🗑️",
        ToolKind::Move => "📦",
        ToolKind::Search => "🔍",
        ToolKind::Execute => "💻",
        ToolKind::Think => "💭",
        ToolKind::Fetch => "🌐",
        ToolKind::SwitchMode => "🔀",
        ToolKind::Other => "🔧",
    }
}

fn kind_word(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::Read => "read",
        ToolKind::Edit => "edit",
        ToolKind::Delete => "delete",
        ToolKind::Move => "move",
        ToolKind::Search => "search",
        ToolKind::Execute => "execute",
        ToolKind::Think => "think",
        ToolKind::Fetch => "fetch",
        ToolKind::SwitchMode => "switch mode",
        ToolKind::Other => "other",
    }
}

/// HTML-escapes `text`.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let _ = pulldown_cmark_escape::escape_html(&mut out, text);
    out
}

/// Plain and HTML text built side by side.
#[derive(Default)]
struct Both {
    plain: String,
    html: String,
    /// Whether invisible and direction-changing characters are shown as `<U+…>` (in what
    /// people are asked to approve, so nothing hides in it).
    reveal: bool,
}

impl Both {
    /// Text that makes invisible characters visible (see [`reveal`]).
    fn revealing() -> Self {
        Self {
            reveal: true,
            ..Self::default()
        }
    }

    /// `text`, revealed if this message reveals.
    fn shown<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        match self.reveal {
            true => reveal(text),
            false => std::borrow::Cow::Borrowed(text),
        }
    }

    /// A line of text (escaped for HTML), optionally bold in HTML.
    fn line(&mut self, text: &str, bold: bool) {
        self.sep();
        let text = &*self.shown(text);
        self.plain.push_str(text);
        if bold {
            let _ = write!(self.html, "<b>{}</b>", esc(text));
        } else {
            self.html.push_str(&esc(text));
        }
    }

    /// A preformatted block.
    fn block(&mut self, text: &str, language: Option<&str>) {
        self.sep();
        let text = &*self.shown(text);
        self.plain.push_str(text);
        let class = language.map_or(String::new(), |l| format!(" class=\"language-{l}\""));
        let _ = write!(self.html, "<pre><code{class}>{}</code></pre>", esc(text));
    }

    /// A preformatted block folded under `summary` in HTML (`<details>`), whole in plain
    /// text.
    fn folded(&mut self, summary: &str, text: &str, language: Option<&str>) {
        self.sep();
        let text = &*self.shown(text);
        let _ = write!(self.plain, "{summary}\n{text}");
        let class = language.map_or(String::new(), |l| format!(" class=\"language-{l}\""));
        let _ = write!(
            self.html,
            "<details><summary>{}</summary><pre><code{class}>{}</code></pre></details>",
            esc(summary),
            esc(text)
        );
    }

    fn sep(&mut self) {
        if !self.plain.is_empty() {
            self.plain.push('\n');
            if !self.html.ends_with("</pre>") && !self.html.ends_with("</details>") {
                self.html.push_str("<br>");
            }
        }
    }

    fn into_message(self, notice: bool) -> OutMessage {
        OutMessage {
            body: self.plain,
            html: Some(self.html),
            notice,
            mentions: Vec::new(),
            reply_to: None,
            thread: None,
            attachment: None,
            live: false,
        }
    }
}

/// The title a tool call is shown with.
fn title(tool: &ToolCallFields) -> String {
    tool.title
        .clone()
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| format!("tool call {}", tool.id))
}

/// The command an `execute` call runs, from its raw input (`command` as text or a list).
fn command(tool: &ToolCallFields) -> Option<String> {
    let input = tool.raw_input.as_ref()?;
    let command = input.get("command").or_else(|| input.get("cmd"))?;
    match command {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Array(parts) => Some(
            parts
                .iter()
                .map(|p| p.as_str().map_or_else(|| p.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    }
}

/// What a tool's input says to people, when it speaks to them: a confirmation's `message`
/// (pi's `confirm`), after its `title` unless that is the card's title already. Shown as
/// text, cut like any input, instead of as JSON.
fn input_message(tool: &ToolCallFields) -> Option<String> {
    let input = tool.raw_input.as_ref()?.as_object()?;
    let message = input.get("message")?.as_str()?.trim();
    if message.is_empty() {
        return None;
    }
    let title = (input.get("title").and_then(serde_json::Value::as_str))
        .map(str::trim)
        .filter(|t| !t.is_empty() && Some(*t) != tool.title.as_deref().map(str::trim));
    let text = match title {
        Some(title) => format!("{title}: {message}"),
        None => message.to_owned(),
    };
    Some(cut_chars(&text, RAW_INPUT_CHARS))
}

/// A unified diff of one file change, cut to `max_lines` lines.
fn diff_lines(old: Option<&str>, new: &str) -> Vec<String> {
    let diff = similar::TextDiff::from_lines(old.unwrap_or(""), new);
    diff.unified_diff()
        .context_radius(1)
        .to_string()
        .lines()
        .filter(|l| !l.starts_with("@@"))
        .map(str::to_owned)
        .collect()
}

/// How much of a tool's diffs a message shows.
#[derive(Debug, Clone, Copy)]
enum DiffsShown {
    /// The first lines (a tool card: the change is done or under way).
    Cut(usize),
    /// All of it, folded when long (a poll: people approve what they could see).
    Whole,
}

/// As many whole lines as fit in `max` bytes (as plain text and as escaped HTML
/// together), and how many did not fit.
fn cut_bytes(lines: &[String], max: usize) -> (String, usize) {
    let mut out = String::new();
    let mut used = 0;
    for (i, line) in lines.iter().enumerate() {
        used += line.len() + esc(line).len() + 2;
        if used > max {
            return (out, lines.len() - i);
        }
        if i > 0 {
            out.push('\n');
        }
        out.push_str(line);
    }
    (out, 0)
}

/// `text` with the characters that change how text reads without showing (zero-width,
/// bidirectional overrides and isolates, soft hyphens, other format and control
/// characters but line breaks and tabs) written out as `<U+202E>`.
pub fn reveal(text: &str) -> std::borrow::Cow<'_, str> {
    fn hidden(c: char) -> bool {
        matches!(c,
            '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}'
            | '\u{17B5}' | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FEFF}'
            | '\u{FFA0}' | '\u{FFF9}'..='\u{FFFB}' | '\u{E0000}'..='\u{E007F}')
            || (c.is_control() && c != '\n' && c != '\t')
    }
    if !text.chars().any(hidden) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match hidden(c) {
            true => {
                let _ = write!(out, "<U+{:04X}>", c as u32);
            }
            false => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The first `max` lines, with a count of those left out.
fn cut_lines(lines: &[String], max: usize) -> String {
    let mut out = lines
        .iter()
        .take(max)
        .cloned()
        .collect::<Vec<_>>()
        .join("\n");
    if lines.len() > max {
        let _ = write!(out, "\n… {} more lines", lines.len() - max);
    }
    out
}

/// The last `max` lines of an output (the end of a command's output matters most).
fn tail_lines(text: &str, max: usize) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let skip = lines.len().saturating_sub(max);
    let mut out = String::new();
    if skip > 0 {
        let _ = writeln!(out, "… {skip} lines before");
    }
    out.push_str(&lines[skip..].join("\n"));
    out
}

fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// What a tool call will do or did: its command, its file changes, else its locations and
/// its raw input summarised.
fn describe(out: &mut Both, tool: &ToolCallFields, diffs_shown: DiffsShown) {
    if let Some(command) = command(tool) {
        out.block(&format!("$ {command}"), None);
    }
    let diffs: Vec<(&String, Option<&String>, &String)> = tool
        .content
        .iter()
        .flatten()
        .filter_map(|c| match c {
            ToolContent::Diff { path, old, new } => Some((path, old.as_ref(), new)),
            ToolContent::Text(_) => None,
        })
        .collect();
    for (path, old, new) in &diffs {
        let verb = if old.is_some() { "changes" } else { "creates" };
        out.line(&format!("{verb} {path}"), false);
        let lines = diff_lines(old.map(String::as_str), new);
        match diffs_shown {
            DiffsShown::Cut(max) => out.block(&cut_lines(&lines, max), Some("diff")),
            DiffsShown::Whole if lines.len() <= POLL_DIFF_LINES => {
                out.block(&lines.join("\n"), Some("diff"))
            }
            DiffsShown::Whole => {
                let (whole, left_out) = cut_bytes(&lines, POLL_DIFF_BYTES);
                let mut summary = format!("The whole change ({} lines)", lines.len());
                if left_out > 0 {
                    let _ = write!(
                        summary,
                        ": {left_out} lines do not fit in a message and are not shown"
                    );
                }
                out.folded(&summary, &whole, Some("diff"));
            }
        }
    }
    if diffs.is_empty() {
        let locations = tool.locations.as_deref().unwrap_or_default();
        if !locations.is_empty() {
            let shown: Vec<&str> = locations.iter().take(5).map(String::as_str).collect();
            let more = locations.len().saturating_sub(shown.len());
            let mut text = format!("📄 {}", shown.join(", "));
            if more > 0 {
                let _ = write!(text, " and {more} more");
            }
            out.line(&text, false);
        }
    }
    let has_command = command(tool).is_some();
    if !has_command
        && diffs.is_empty()
        && let Some(message) = input_message(tool)
    {
        out.line(&message, false);
    } else if !has_command && diffs.is_empty() {
        let summary = tool
            .raw_input
            .as_ref()
            .filter(|v| !v.is_null() && v.as_object().is_none_or(|o| !o.is_empty()))
            .map(|v| cut_chars(&v.to_string(), RAW_INPUT_CHARS));
        if let Some(summary) = summary {
            out.block(&summary, Some("json"));
        }
    }
}

/// A tool card: status, kind and title, what it does, and an excerpt of its output.
pub fn tool_card(tool: &ToolCallFields, status: CardStatus) -> OutMessage {
    tool_card_decided(tool, status, None)
}

/// A tool card that stands where the poll asking about its call was: the card, then how
/// the poll ended (`decision`, from [`poll_outcome`]), so one message tells the call's
/// whole story.
pub fn tool_card_decided(
    tool: &ToolCallFields,
    status: CardStatus,
    decision: Option<&str>,
) -> OutMessage {
    let (icon, word) = status.icon_and_word();
    let kind = tool.kind.unwrap_or_default();
    let mut out = Both::default();
    out.sep();
    out.plain.push_str(&format!(
        "{icon} {} {} · {word}",
        kind_icon(kind),
        title(tool)
    ));
    let _ = write!(
        out.html,
        "{icon} {} <b>{}</b> · {word}",
        kind_icon(kind),
        esc(&title(tool))
    );
    describe(&mut out, tool, DiffsShown::Cut(CARD_EXCERPT_LINES));
    if let Some(output) = output_of(tool) {
        out.block(&tail_lines(&output, CARD_EXCERPT_LINES), None);
    }
    if let Some(decision) = decision {
        out.line(decision, true);
    }
    out.into_message(true)
}

/// What a tool call put out: its text content, else its raw output.
fn output_of(tool: &ToolCallFields) -> Option<String> {
    let output: Vec<&str> = tool
        .content
        .iter()
        .flatten()
        .filter_map(|c| match c {
            ToolContent::Text(t) if !t.trim().is_empty() => Some(t.as_str()),
            _ => None,
        })
        .collect();
    if output.is_empty() {
        tool.raw_output
            .as_ref()
            .filter(|v| !v.is_null())
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
    } else {
        Some(output.join("\n"))
    }
}

/// A tool call's whole output when its card shows only the end of it (to attach to the
/// card as a file); `None` when the card shows all of it.
pub fn cut_output(tool: &ToolCallFields) -> Option<String> {
    output_of(tool).filter(|o| o.trim_end().lines().count() > CARD_EXCERPT_LINES)
}

/// The file name of a tool call's whole output: its title made a file name.
pub fn output_file_name(tool: &ToolCallFields) -> String {
    let title: String = title(tool)
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    let title = title.trim_matches('-');
    match title.is_empty() {
        true => "output.txt".into(),
        false => format!("{title}-output.txt"),
    }
}

/// The plan as a checklist, replaced whole on every update.
pub fn plan(entries: &[PlanEntry]) -> OutMessage {
    let done = entries
        .iter()
        .filter(|e| e.status == PlanStatus::Completed)
        .count();
    let header = format!("📋 Plan ({done}/{} done)", entries.len());
    let mark = |s: PlanStatus| match s {
        PlanStatus::Completed => "✅",
        PlanStatus::InProgress => "▶️",
        PlanStatus::Pending => "⬜",
    };
    let mut body = header.clone();
    let mut html = format!("<b>{}</b><ul>", esc(&header));
    for e in entries {
        let _ = write!(body, "\n{} {}", mark(e.status), e.text);
        let _ = write!(html, "<li>{} {}</li>", mark(e.status), esc(&e.text));
    }
    html.push_str("</ul>");
    OutMessage {
        body,
        html: Some(html),
        notice: true,
        mentions: Vec::new(),
        reply_to: None,
        thread: None,
        attachment: None,
        live: false,
    }
}

/// The thinking indicator: short while the agent thinks, then folded with the thoughts.
pub fn thinking(elapsed: Option<Duration>, thoughts: &str) -> OutMessage {
    match elapsed {
        None => OutMessage::notice("💭 Thinking…"),
        Some(elapsed) => {
            let summary = format!("💭 Thought for {}", strings::duration(elapsed));
            OutMessage {
                html: Some(format!(
                    "<details><summary>{}</summary><blockquote>{}</blockquote></details>",
                    esc(&summary),
                    esc(&cut_chars(thoughts.trim(), THOUGHT_CHARS)).replace('\n', "<br>")
                )),
                body: summary,
                notice: true,
                mentions: Vec::new(),
                reply_to: None,
                thread: None,
                attachment: None,
                live: false,
            }
        }
    }
}

/// The last lines an agent wrote to stderr, folded, for a room where everyone may read them.
pub fn stderr_tail(agent: &str, tail: &str) -> OutMessage {
    let summary = strings::stderr_summary(agent, tail.lines().count());
    OutMessage {
        html: Some(format!(
            "<details><summary>{}</summary><pre><code>{}</code></pre></details>",
            esc(&summary),
            esc(tail)
        )),
        body: format!("{summary}\n{tail}"),
        notice: true,
        mentions: Vec::new(),
        reply_to: None,
        thread: None,
        attachment: None,
        live: false,
    }
}

/// How a poll was settled, for the edited poll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PollOutcome {
    /// Someone chose an option.
    Chosen {
        /// Who.
        by: String,
        /// The choice's emoji.
        emoji: String,
        /// The option's name.
        label: String,
        /// Whether it refuses the call.
        refusal: bool,
    },
    /// Someone stopped the turn from the poll.
    Stopped {
        /// Who.
        by: String,
    },
    /// Nobody answered in time; `label` is the refusal sent, if any.
    Expired {
        /// The option sent instead.
        label: Option<String>,
    },
    /// The turn was stopped (by `!stop`, 🛑 on the reply, or shutdown).
    TurnStopped,
    /// The turn ended before anyone answered.
    TurnEnded,
    /// The gateway restarted while the poll was open.
    Restarted,
    /// Someone answered a question by typing (`text`: what they typed, as it was read).
    Answered {
        /// Who.
        by: String,
        /// Their answer.
        text: String,
    },
}

/// The sentence that closes a poll.
pub fn poll_outcome(outcome: &PollOutcome) -> String {
    match outcome {
        PollOutcome::Chosen {
            by, emoji, label, ..
        } => format!("{emoji} {label}, chosen by {by}"),
        PollOutcome::Stopped { by } => format!("🛑 {by} stopped the turn."),
        PollOutcome::Expired { label: Some(label) } => {
            format!("⌛ Nobody answered in time, so it was refused: {label}")
        }
        PollOutcome::Expired { label: None } => {
            "⌛ Nobody answered in time; the request was withdrawn.".into()
        }
        PollOutcome::TurnStopped => "⏹️ Cancelled: the turn was stopped.".into(),
        PollOutcome::TurnEnded => "⏹️ Cancelled: the turn ended before an answer.".into(),
        PollOutcome::Restarted => {
            "⌛ Expired: Sidekicks restarted before anyone answered; the turn was cut.".into()
        }
        PollOutcome::Answered { by, text } => format!("✍️ Answered by {by}: {text}"),
    }
}

/// Everything a poll shows.
pub struct PollView<'a> {
    /// The agent's display name.
    pub agent: &'a str,
    /// The tool call as known when the poll is drawn.
    pub tool: &'a ToolCallFields,
    /// The choices, in order.
    pub choices: &'a [Choice],
    /// The typed answers that pick a choice of this poll (`allow`, `always`, …), listed
    /// for clients without reactions.
    pub typed: &'a [&'static str],
    /// The chat command prefix, for the typed answers.
    pub prefix: &'a str,
    /// How long before it expires.
    pub timeout: Duration,
}

fn poll_head(out: &mut Both, agent: &str, tool: &ToolCallFields, open: bool) {
    let verb = if open { "asks" } else { "asked" };
    let kind = tool.kind.unwrap_or_default();
    let head = format!(
        "🔐 {agent} {verb} to use a tool: {} {} ({})",
        kind_icon(kind),
        title(tool),
        kind_word(kind)
    );
    out.line(&head, true);
    describe(out, tool, DiffsShown::Whole);
}

/// An open poll: what the tool will do and one line per choice.
pub fn poll(view: &PollView<'_>) -> OutMessage {
    let mut out = Both::revealing();
    poll_head(&mut out, view.agent, view.tool, true);
    out.line("React to answer; the first approver decides:", false);
    for c in view.choices {
        out.line(&format!("{}. {} {}", c.number, c.emoji, c.label), false);
    }
    let words: Vec<String> = (view.typed.iter())
        .map(|w| format!("{}{w}", view.prefix))
        .chain(["a number".to_owned()])
        .collect();
    out.line(
        &format!(
            "No reactions in your client? Reply to this message with {}. Unanswered, it is \
             refused after {}.",
            strings::either(&words),
            strings::duration(view.timeout)
        ),
        false,
    );
    out.into_message(false)
}

/// An open native poll's question: what the tool will do, and how else to answer (its
/// choices are the poll's answers). `reacts`: its choices are also its reactions.
pub fn native_poll(view: &PollView<'_>, reacts: bool) -> OutMessage {
    let mut out = Both::revealing();
    poll_head(&mut out, view.agent, view.tool, true);
    let words: Vec<String> = (view.typed.iter())
        .map(|w| format!("{}{w}", view.prefix))
        .chain(["an answer's number".to_owned()])
        .collect();
    let how = match reacts {
        true => "Answer in the poll or react with an answer's emoji",
        false => "Answer in the poll",
    };
    out.line(
        &format!(
            "{how}; the first approver decides. No polls in your client? Reply to this \
             message with {}. Unanswered, it is refused after {}.",
            strings::either(&words),
            strings::duration(view.timeout)
        ),
        false,
    );
    out.into_message(false)
}

/// What ends a native poll: how it was settled.
pub fn poll_ended(outcome: &PollOutcome) -> OutMessage {
    OutMessage::notice(format!("The poll has ended: {}", poll_outcome(outcome)))
}

/// A settled poll: what was asked and how it ended.
pub fn poll_settled(agent: &str, tool: &ToolCallFields, outcome: &PollOutcome) -> OutMessage {
    let mut out = Both::revealing();
    poll_head(&mut out, agent, tool, false);
    out.line(&poll_outcome(outcome), true);
    out.into_message(false)
}

/// A token count as people read it at a glance: `950`, `1.5k`, `150k`, `1.2M`.
pub(crate) fn tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..10_000 => format!("{:.1}k", n as f64 / 1000.0),
        10_000..1_000_000 => format!("{}k", n / 1000),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// A compact usage line: the context window and the session's token counts, whichever the
/// agent reported. `None` when it reported neither.
pub fn usage_line(
    context: Option<(u64, u64)>,
    counts: Option<&TokenUsage>,
    cost: Option<&Cost>,
) -> Option<String> {
    let mut parts = Vec::new();
    match context {
        Some((used, 0)) => parts.push(format!("context {} tokens", tokens(used))),
        Some((used, size)) => parts.push(format!(
            "context {}/{} ({}%)",
            tokens(used),
            tokens(size),
            used * 100 / size
        )),
        None => {}
    }
    if let Some(u) = counts {
        let mut text = format!("{} in · {} out", tokens(u.input), tokens(u.output));
        if let Some(t) = u.thought.filter(|t| *t > 0) {
            let _ = write!(text, " · {} thinking", tokens(t));
        }
        if let Some(c) = u.cached_read.filter(|c| *c > 0) {
            let _ = write!(text, " · {} cached", tokens(c));
        }
        parts.push(text);
    }
    if let Some(c) = cost {
        // Small sums keep their cents' fractions.
        let amount = match c.amount.abs() < 0.01 && c.amount != 0.0 {
            true => format!("{:.4}", c.amount),
            false => format!("{:.2}", c.amount),
        };
        parts.push(format!("cost {amount} {}", c.currency));
    }
    (!parts.is_empty()).then(|| format!("📊 {}", parts.join(" · ")))
}

mod question;
pub use question::{QuestionView, question, question_settled};
mod task;
pub use task::{TaskView, task};

#[cfg(test)]
mod tests;
