//! What the demo agent makes of a prompt's content blocks (`%blocks` reports them, so tests
//! see what reached the agent), and the files it can put in an answer (`%image`, `%link`).

use agent_client_protocol::v1::schema::{
    ContentBlock, EmbeddedResourceResource, ImageContent, ResourceLink,
};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

/// A 1×1 PNG, as base64: the picture `%image` answers with.
const DOT_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// One line about `block`: its kind, and its MIME type, size and name where it has them.
pub(super) fn describe(block: &ContentBlock) -> String {
    let bytes = |base64: &str| BASE64.decode(base64.trim()).map_or(0, |b| b.len());
    match block {
        ContentBlock::Text(t) => format!("text {} chars", t.text.chars().count()),
        ContentBlock::Image(i) => format!("image {} {} bytes", i.mime_type, bytes(&i.data)),
        ContentBlock::Audio(a) => format!("audio {} {} bytes", a.mime_type, bytes(&a.data)),
        ContentBlock::ResourceLink(l) => format!(
            "link {} {} {} {} bytes",
            l.name,
            l.uri,
            l.mime_type.as_deref().unwrap_or("-"),
            l.size.unwrap_or(-1)
        ),
        ContentBlock::Resource(r) => match &r.resource {
            EmbeddedResourceResource::TextResourceContents(t) => format!(
                "embedded {} {} {} chars: {}",
                t.uri,
                t.mime_type.as_deref().unwrap_or("-"),
                t.text.chars().count(),
                t.text.lines().next().unwrap_or_default()
            ),
            EmbeddedResourceResource::BlobResourceContents(b) => {
                format!("embedded blob {} {} bytes", b.uri, bytes(&b.blob))
            }
            #[allow(unreachable_patterns)]
            _ => "embedded ?".into(),
        },
        _ => "other".into(),
    }
}

/// The picture `%image` answers with.
pub(super) fn dot_image() -> ContentBlock {
    ContentBlock::Image(ImageContent::new(DOT_PNG, "image/png"))
}

/// A link to `path` (relative to the session's folder `cwd`), as `%link` answers it.
pub(super) fn link(cwd: &std::path::Path, path: &str) -> ContentBlock {
    let full = cwd.join(path);
    let name = full
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_owned());
    ContentBlock::ResourceLink(ResourceLink::new(
        name,
        format!("file://{}", full.display()),
    ))
}

/// One line about the client, from its `initialize` request: its name and version, and
/// whether it offers file access, terminals, questions and being told of compactions.
pub(super) fn client_line(req: &agent_client_protocol::v1::schema::InitializeRequest) -> String {
    let who = req
        .client_info
        .as_ref()
        .map(|i| format!("{} {}", i.name, i.version))
        .unwrap_or_else(|| "unnamed".into());
    let caps = &req.client_capabilities;
    let yes = |on: bool| if on { "yes" } else { "no" };
    let questions = caps.elicitation.as_ref().map_or("no".to_owned(), |e| {
        let modes: Vec<&str> = [(e.supports_form(), "form"), (e.supports_url(), "url")]
            .into_iter()
            .filter_map(|(on, mode)| on.then_some(mode))
            .collect();
        format!("yes ({})", modes.join(", "))
    });
    let compaction = (caps.session.as_ref()).is_some_and(|s| s.compaction.is_some());
    format!(
        "client: {who}; fs read: {}, write: {}; terminal: {}; elicitation: {questions}; \
         compaction: {}",
        yes(caps.fs.read_text_file),
        yes(caps.fs.write_text_file),
        yes(caps.terminal),
        yes(compaction)
    )
}

/// One line about an MCP server a session was given: its name, kind, command or URL, and
/// the names (never the values) of its variables or headers.
pub(super) fn describe_mcp(server: &agent_client_protocol::v1::schema::McpServer) -> String {
    use agent_client_protocol::v1::schema::McpServer;
    match server {
        McpServer::Stdio(s) => format!(
            "mcp: {} stdio {} {} env={}",
            s.name,
            s.command.display(),
            s.args.join(" "),
            s.env
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>()
                .join(",")
        ),
        McpServer::Http(h) => format!(
            "mcp: {} http {} headers={}",
            h.name,
            h.url,
            h.headers
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>()
                .join(",")
        ),
        _ => "mcp: other".into(),
    }
}

/// What the client said when it refused a request: the error's details when it has them
/// (a string as it is), else its message.
pub(super) fn why(e: agent_client_protocol::Error) -> String {
    match e.data {
        Some(serde_json::Value::String(s)) => s,
        Some(d) => d.to_string(),
        None => e.message,
    }
}

/// A mode's name from its ID, as `--modes` gives only IDs: `turbo-edit` is "Turbo edit".
pub(super) fn mode_name(id: &str) -> String {
    let words = id.replace(['-', '_'], " ");
    let mut chars = words.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
