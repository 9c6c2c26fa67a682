//! A scripted model server for real agents in the tests: enough of the Anthropic Messages
//! streaming API (`POST /v1/messages`, Claude Code), of the OpenAI Responses streaming API
//! (`POST /v1/responses`, Codex) and of the OpenAI Chat Completions streaming API (`POST
//! /v1/chat/completions`: GitHub Copilot's CLI, Qwen Code) for an agent to answer, run a
//! shell command and write a file, all decided by markers in the person's message:
//!
//! | marker in the prompt | the model answers |
//! |---|---|
//! | `RUN: CMD` (to the end of the line) | a `Bash` tool call running CMD (over Chat Completions, the agent's own shell tool), then (with its result) `The command ran: OUTPUT` or `The tool was refused.` |
//! | `BACKGROUND: CMD` | (Anthropic only) a `Bash` tool call running CMD in the background (`run_in_background`), then `The command ran: …` with what Claude Code answered |
//! | `WRITE: PATH TEXT` | a `Write` tool call writing TEXT to PATH (absolute), then `Written.` |
//! | `PLAN: TEXT` | (Anthropic only) an `ExitPlanMode` tool call offering the plan TEXT, then `The command ran: …` with what Claude Code answered |
//! | `MCP: TOOL JSON` | (Anthropic only) a call of tool TOOL of the gateway's room tools (`mcp__sidekicks__TOOL`) with the JSON arguments, then `The command ran: OUTPUT` |
//! | `SLOW` | `tick 1 tick 2 …`, one every 100 ms for a minute (to be stopped) |
//! | `RECALL` | `I remember: ` and every earlier prompt's `NOTE: …` line |
//! | anything else | `Hello from the script model.`, in three chunks |
//!
//! Every request is kept, for tests to look at.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The running server.
pub struct ModelServer {
    /// Its base URL (`http://127.0.0.1:PORT`).
    pub url: String,
    /// Every request body received, in order.
    requests: Arc<Mutex<Vec<Value>>>,
}

/// The tool calls whose results the model has already answered (Claude Code sends every
/// result again with each later request, after the newest prompt's text or before it).
type Answered = Arc<Mutex<std::collections::HashSet<String>>>;

/// One step of a streamed answer: an SSE event, or a pause.
enum Step {
    Event(String, Value),
    Pause(Duration),
}

impl ModelServer {
    /// Starts it on a free loopback port.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let kept = requests.clone();
        let answered = Answered::default();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, kept.clone(), answered.clone()));
            }
        });
        Self { url, requests }
    }

    /// Every request body received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
}

/// Reads one HTTP request, answers it, closes the connection.
async fn serve(mut stream: TcpStream, requests: Arc<Mutex<Vec<Value>>>, answered: Answered) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let Ok(n) = stream.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let Ok(n) = stream.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body: Value =
        serde_json::from_slice(&buf[head_end..head_end + length]).unwrap_or(Value::Null);
    let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
    requests.lock().unwrap().push(body.clone());
    if path.starts_with("/v1/responses") {
        stream_steps(&mut stream, openai(&body)).await;
        return;
    }
    if path.starts_with("/v1/chat/completions") {
        stream_chunks(&mut stream, chat(&body)).await;
        return;
    }
    if !path.starts_with("/v1/messages") || path.starts_with("/v1/messages/count_tokens") {
        let reply = if path.starts_with("/v1/messages/count_tokens") {
            json!({"input_tokens": 10}).to_string()
        } else {
            "{}".to_owned()
        };
        let status = if path.starts_with("/v1/messages") {
            "200 OK"
        } else {
            "404 Not Found"
        };
        write_json(&mut stream, status, &reply).await;
        return;
    }
    let model = body["model"].as_str().unwrap_or("claude").to_owned();
    // Asked for a title (Claude Code titles each new session): a title, whatever the message.
    let steps = match body["output_config"]["format"]["type"] == "json_schema" {
        true => text_answer(
            &model,
            &[r#"{"title": "Scripted session"}"#],
            Duration::ZERO,
        ),
        false => anthropic(&body, &model, &answered),
    };
    if body["stream"].as_bool() != Some(true) {
        // A request that does not stream gets the text of the answer at once.
        let text: String = steps
            .iter()
            .filter_map(|s| match s {
                Step::Event(_, e) => e["delta"]["text"].as_str().map(str::to_owned),
                Step::Pause(_) => None,
            })
            .collect();
        let reply =
            json!({"id": "msg_once", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 10, "output_tokens": 5}})
            .to_string();
        write_json(&mut stream, "200 OK", &reply).await;
        return;
    }
    stream_steps(&mut stream, steps).await;
}

/// Writes a JSON answer with `status`.
async fn write_json(stream: &mut TcpStream, status: &str, body: &str) {
    let answer = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(answer.as_bytes()).await;
}

/// Streams `steps` as server-sent events, pausing where they say, until done or the agent
/// hangs up (a cancelled turn).
async fn stream_steps(stream: &mut TcpStream, steps: Vec<Step>) {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    for step in steps {
        match step {
            Step::Pause(d) => tokio::time::sleep(d).await,
            Step::Event(name, data) => {
                let event = format!("event: {name}\ndata: {data}\n\n");
                if stream.write_all(event.as_bytes()).await.is_err() {
                    return;
                }
                let _ = stream.flush().await;
            }
        }
    }
}

/// All the text of a message's content (a string, or its text blocks).
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The line after `marker` in `text`, if any.
fn after<'a>(text: &'a str, marker: &str) -> Option<&'a str> {
    let at = text.find(marker)? + marker.len();
    Some(text[at..].lines().next().unwrap_or("").trim())
}

/// The answer to an Anthropic Messages request, as SSE steps.
fn anthropic(body: &Value, model: &str, answered: &Answered) -> Vec<Step> {
    // Claude Code 2.1 puts its environment in a `system` message after the person's: the
    // conversation is the user and assistant messages.
    let messages: Vec<Value> = (body["messages"].as_array().cloned().unwrap_or_default())
        .into_iter()
        .filter(|m| m["role"] != "system")
        .collect();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let blocks = last["content"].as_array().cloned().unwrap_or_default();
    let text = text_of(&last["content"]);
    // Asked to guess what the person types next: nothing.
    if text.contains("[SUGGESTION MODE") {
        return text_answer(model, &[""], Duration::ZERO);
    }
    // A tool's result not answered yet is what to answer; otherwise the person's text.
    let fresh = blocks.iter().find(|b| {
        b["type"] == "tool_result"
            && b["tool_use_id"]
                .as_str()
                .is_some_and(|id| answered.lock().unwrap().insert(id.to_owned()))
    });
    if let Some(result) = fresh {
        let output = match &result["content"] {
            Value::String(s) => s.clone(),
            other => text_of(other),
        };
        if result["is_error"].as_bool() == Some(true) {
            return text_answer(model, &["The tool was refused."], Duration::ZERO);
        }
        let said = format!("The command ran: {}", output.trim());
        return text_answer(model, &[&said], Duration::ZERO);
    }
    if let Some(command) = after(&text, "RUN:") {
        return tool_answer(
            model,
            messages.len(),
            "Bash",
            json!({"command": command, "description": "Run the command asked for"}),
        );
    }
    if let Some(command) = after(&text, "BACKGROUND:") {
        return tool_answer(
            model,
            messages.len(),
            "Bash",
            json!({"command": command, "description": "Run it in the background",
                "run_in_background": true}),
        );
    }
    if let Some(plan) = after(&text, "PLAN:") {
        return tool_answer(
            model,
            messages.len(),
            "ExitPlanMode",
            json!({"plan": format!("# Plan\n\n{plan}")}),
        );
    }
    if let Some(rest) = after(&text, "WRITE:") {
        let (path, content) = rest.split_once(' ').unwrap_or((rest, ""));
        return tool_answer(
            model,
            messages.len(),
            "Write",
            json!({"file_path": path, "content": content}),
        );
    }
    if let Some(rest) = after(&text, "MCP:") {
        let (tool, arguments) = rest.split_once(' ').unwrap_or((rest, "{}"));
        let arguments: Value = serde_json::from_str(arguments).unwrap_or(json!({}));
        let name = format!("mcp__sidekicks__{tool}");
        return tool_answer(model, messages.len(), &name, arguments);
    }
    if text.contains("SLOW") {
        let ticks: Vec<String> = (1..=600).map(|i| format!("tick {i} ")).collect();
        let ticks: Vec<&str> = ticks.iter().map(String::as_str).collect();
        return text_answer(model, &ticks, Duration::from_millis(100));
    }
    if text.contains("RECALL") {
        let notes: Vec<String> = messages
            .iter()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| after(&text_of(&m["content"]), "NOTE:").map(str::to_owned))
            .collect();
        let said = format!("I remember: {}", notes.join(", "));
        return text_answer(model, &[&said], Duration::ZERO);
    }
    text_answer(
        model,
        &["Hello ", "from the script ", "model."],
        Duration::from_millis(50),
    )
}

fn start(model: &str) -> Step {
    Step::Event(
        "message_start".into(),
        json!({"type": "message_start", "message": {"id": "msg_script", "type": "message",
            "role": "assistant", "model": model, "content": [], "stop_reason": null,
            "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    )
}

fn end(reason: &str) -> [Step; 2] {
    [
        Step::Event(
            "message_delta".into(),
            json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null},
                "usage": {"output_tokens": 5}}),
        ),
        Step::Event("message_stop".into(), json!({"type": "message_stop"})),
    ]
}

fn text_answer(model: &str, chunks: &[&str], pause: Duration) -> Vec<Step> {
    let mut steps = vec![
        start(model),
        Step::Event(
            "content_block_start".into(),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
    ];
    for chunk in chunks {
        steps.push(Step::Event(
            "content_block_delta".into(),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": chunk}}),
        ));
        if !pause.is_zero() {
            steps.push(Step::Pause(pause));
        }
    }
    steps.push(Step::Event(
        "content_block_stop".into(),
        json!({"type": "content_block_stop", "index": 0}),
    ));
    steps.extend(end("end_turn"));
    steps
}

fn tool_answer(model: &str, turn: usize, tool: &str, input: Value) -> Vec<Step> {
    let mut steps = vec![
        start(model),
        Step::Event(
            "content_block_start".into(),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use",
                "id": format!("toolu_{}_{turn}", tool.to_lowercase()), "name": tool, "input": {}}}),
        ),
        Step::Event(
            "content_block_delta".into(),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta",
                "partial_json": input.to_string()}}),
        ),
        Step::Event(
            "content_block_stop".into(),
            json!({"type": "content_block_stop", "index": 0}),
        ),
    ];
    steps.extend(end("tool_use"));
    steps
}

/// Whether Codex says its sandbox keeps commands from writing: the newest `sandbox_mode` its
/// instructions state (they say it again when the mode changes) is not full access.
fn sandboxed(body: &Value) -> bool {
    let text = body.to_string();
    let marker = "`sandbox_mode` is `";
    let Some(at) = text.rfind(marker) else {
        return false;
    };
    let mode = text[at + marker.len()..].split('`').next().unwrap_or("");
    mode != "danger-full-access"
}

/// The text of an OpenAI Responses input item (its `input_text` parts).
fn input_text(item: &Value) -> String {
    match &item["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The answer to an OpenAI Responses request, as SSE steps (the event name is its `type`).
fn openai(body: &Value) -> Vec<Step> {
    let input = body["input"].as_array().cloned().unwrap_or_default();
    let last = input.last().cloned().unwrap_or(Value::Null);
    if last["type"] == "function_call_output" {
        let output = match &last["output"] {
            Value::String(s) => s.clone(),
            other => other["content"]
                .as_str()
                .map_or_else(|| other.to_string(), str::to_owned),
        };
        // Codex reports what the command printed among lines of its own.
        let printed = output.lines().last().unwrap_or("").trim().to_owned();
        let said = format!("The command ran: {printed}");
        return openai_text(&[&said], Duration::ZERO);
    }
    let text = input
        .iter()
        .rev()
        .find(|i| i["role"] == "user")
        .map(input_text)
        .unwrap_or_default();
    // Asked for a title (Codex titles each new conversation): a title, whatever the message.
    if body["text"]["format"]["type"] == "json_schema" {
        return openai_text(&[r#"{"title": "Scripted session"}"#], Duration::ZERO);
    }
    if let Some(command) = after(&text, "RUN:") {
        // Where its sandbox keeps commands from writing (Codex's read-only mode), the model
        // asks to run them outside it, as Codex's instructions say: that is what asks the
        // person. In full access it just runs them.
        let arguments = match sandboxed(body) {
            true => json!({"cmd": command, "sandbox_permissions": "require_escalated",
                "justification": "Run the command asked for"}),
            false => json!({"cmd": command}),
        }
        .to_string();
        let item = json!({"type": "function_call", "id": format!("fc_{}", input.len()),
            "call_id": format!("call_{}", input.len()), "name": "exec_command", "arguments": arguments});
        return vec![
            openai_event(json!({"type": "response.created", "response": {"id": "resp_script"}})),
            openai_event(
                json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
            ),
            openai_event(
                json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
            ),
            openai_completed(),
        ];
    }
    if text.contains("RECALL") {
        let notes: Vec<String> = input
            .iter()
            .filter(|i| i["role"] == "user")
            .filter_map(|i| after(&input_text(i), "NOTE:").map(str::to_owned))
            .collect();
        let said = format!("I remember: {}", notes.join(", "));
        return openai_text(&[&said], Duration::ZERO);
    }
    if text.contains("SLOW") {
        let ticks: Vec<String> = (1..=600).map(|i| format!("tick {i} ")).collect();
        let ticks: Vec<&str> = ticks.iter().map(String::as_str).collect();
        return openai_text(&ticks, Duration::from_millis(100));
    }
    openai_text(
        &["Hello ", "from the script ", "model."],
        Duration::from_millis(50),
    )
}

fn openai_event(data: Value) -> Step {
    let name = data["type"].as_str().unwrap_or("").to_owned();
    Step::Event(name, data)
}

fn openai_completed() -> Step {
    openai_event(
        json!({"type": "response.completed", "response": {"id": "resp_script",
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}}),
    )
}

fn openai_text(chunks: &[&str], pause: Duration) -> Vec<Step> {
    let whole: String = chunks.concat();
    let mut steps = vec![
        openai_event(json!({"type": "response.created", "response": {"id": "resp_script"}})),
        openai_event(
            json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"type": "message", "role": "assistant", "id": "msg_script", "content": []}}),
        ),
    ];
    for chunk in chunks {
        steps.push(openai_event(
            json!({"type": "response.output_text.delta", "delta": chunk,
            "item_id": "msg_script", "output_index": 0, "content_index": 0}),
        ));
        if !pause.is_zero() {
            steps.push(Step::Pause(pause));
        }
    }
    steps.push(openai_event(
        json!({"type": "response.output_item.done", "output_index": 0,
        "item": {"type": "message", "role": "assistant", "id": "msg_script",
            "content": [{"type": "output_text", "text": whole}]}}),
    ));
    steps.push(openai_completed());
    steps
}

/// Streams Chat Completions `chunks` as server-sent `data:` lines, then `[DONE]`.
async fn stream_chunks(stream: &mut TcpStream, chunks: Vec<Value>) {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    for chunk in chunks
        .iter()
        .map(Value::to_string)
        .chain(["[DONE]".to_owned()])
    {
        if (stream
            .write_all(format!("data: {chunk}\n\n").as_bytes())
            .await)
            .is_err()
        {
            return;
        }
        let _ = stream.flush().await;
    }
}

/// The shell tools agents offer over Chat Completions, by name: Copilot's `bash`, Qwen
/// Code's `run_shell_command`.
const SHELL_TOOLS: [&str; 3] = ["bash", "run_shell_command", "shell"];

/// The answer to a Chat Completions request, as the chunks of its stream.
fn chat(body: &Value) -> Vec<Value> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-script", "object": "chat.completion.chunk",
            "model": body["model"], "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let done = |finish: &str| {
        let mut end = chunk(json!({}), json!(finish));
        end["usage"] = json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15});
        end
    };
    let say = |text: &str| {
        vec![
            chunk(json!({"role": "assistant", "content": text}), Value::Null),
            done("stop"),
        ]
    };
    if last["role"] == "tool" {
        let output = text_of(&last["content"]);
        // Qwen Code reports a command as `Command: …`, `Output: …` lines.
        let printed = (output.lines())
            .find_map(|l| l.strip_prefix("Output: "))
            .unwrap_or(&output);
        return say(&format!("The command ran: {}", printed.trim()));
    }
    let text = (messages.iter().rev())
        .find(|m| m["role"] == "user")
        .map(|m| text_of(&m["content"]))
        .unwrap_or_default();
    let tools: Vec<&str> = (body["tools"].as_array().into_iter().flatten())
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    let shell = SHELL_TOOLS.iter().find(|name| tools.contains(name));
    if let (Some(command), Some(shell)) = (after(&text, "RUN:"), shell) {
        let arguments = json!({"command": command, "description": "Run the command asked for"});
        let call = json!({"index": 0, "id": format!("call_{}", messages.len()), "type": "function",
            "function": {"name": shell, "arguments": arguments.to_string()}});
        return vec![
            chunk(
                json!({"role": "assistant", "tool_calls": [call]}),
                Value::Null,
            ),
            done("tool_calls"),
        ];
    }
    say("Hello from the script model.")
}
