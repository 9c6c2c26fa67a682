//! `sidekicks check`: the config, and what each agent advertises, without Matrix.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;

mod modes;

use super::isolation::{Probe, isolation};
use super::{process_spec, workspace};
use crate::acp::AcpAgent;
use crate::config::{AgentConfig, Config};
use crate::core::agent::AgentPort;
use crate::core::agent::NewSession;
use crate::model::agent::{AgentEvent, AgentInfo, Reopen};
use crate::workspace::folder::Folder;

/// `sidekicks check`: validates the config, starts each agent, opens a session and prints
/// what the agent advertises. Touches Matrix only to ask whether an agent's issued access
/// token is taken (`access_token_file`). An agent fails the check when its token is refused
/// or it cannot
/// be put in a mode that asks before acting, and with `strict` also when it offers a mode
/// its dialect does not know (a new release to review before people use it).
pub async fn check_from_file(path: &Path, strict: bool) -> Result<()> {
    let (config, unread_secrets) = Config::load_for_check(path)?;
    println!("config {}: valid", path.display());
    for warning in config.warnings() {
        println!("warning: {warning}");
    }
    // Running needs them; checking does not sign in with them.
    for secret in unread_secrets {
        println!("note: {secret} (needed to run, not to check)");
    }
    let mut failed = 0;
    let mut probe = Probe::default();
    for agent in &config.agents {
        println!("\nagent {} ({})", agent.id, agent.display_name);
        println!("  matrix sign-in: {}", agent.matrix.sign_in_words());
        match crate::matrix::check_token(&config.matrix.homeserver, agent).await {
            Ok(None) => {}
            Ok(Some(device)) => println!("  access token: accepted (device {device})"),
            Err(e) => {
                failed += 1;
                println!("  FAILED: {e}");
            }
        }
        match check_agent(&config, agent, &mut probe, strict).await {
            Ok(report) => print!("{report}"),
            Err(e) => {
                failed += 1;
                println!("  FAILED: {e:#}");
            }
        }
    }
    if failed > 0 {
        anyhow::bail!("{failed} agent(s) failed the check");
    }
    Ok(())
}

/// What the agent told of itself at `initialize`, a line each, with what the gateway makes
/// of it (`info`; `dialect` is the one the gateway applies).
fn agent_lines(
    agent: &AgentConfig,
    info: &AgentInfo,
    dialect: &str,
) -> Result<String, std::fmt::Error> {
    use std::fmt::Write;
    let mut out = String::new();
    writeln!(out, "  protocol version: {}", info.protocol_version)?;
    writeln!(
        out,
        "  agent: {} {} {}",
        info.name.as_deref().unwrap_or("(unnamed)"),
        info.version.as_deref().unwrap_or(""),
        info.title
            .as_ref()
            .map(|t| format!("({t})"))
            .unwrap_or_default()
    )?;
    writeln!(
        out,
        "  loadSession: {}",
        if info.load_session { "yes" } else { "no" }
    )?;
    writeln!(
        out,
        "  session resume: {}",
        if info.resume_session { "yes" } else { "no" }
    )?;
    writeln!(out, "  dialect: {dialect}")?;
    writeln!(
        out,
        "  after a restart, conversations continue by: {}",
        match Reopen::for_agent(info) {
            Some(how) => how.continuity(),
            None => "re-injection into a new session",
        }
    )?;
    writeln!(
        out,
        "  prompt content besides text: {}",
        none_or_list(&info.prompt_capabilities.names())
    )?;
    let methods: Vec<String> = [
        (info.load_session, "load"),
        (info.resume_session, "resume"),
        (info.close_session, "close"),
        (info.list_sessions, "list"),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .map(|(_, name)| name.to_owned())
    .collect();
    writeln!(out, "  session methods: {}", none_or_list(&methods))?;
    let servers: Vec<String> = (agent.mcp_servers.iter())
        .map(|m| match (&m.url, info.mcp_http) {
            (None, _) => format!("{} (stdio)", m.name),
            (Some(_), true) => format!("{} (http)", m.name),
            (Some(_), false) => format!(
                "{} (http: left out, the agent does not take HTTP MCP)",
                m.name
            ),
        })
        .collect();
    writeln!(out, "  mcp servers: {}", none_or_list(&servers))?;
    let remote = matches!(agent.runner, crate::config::RunnerConfig::Ssh(_));
    let by_socket = agent.room_tools_by_socket();
    let room_tools = match (agent.room_tools, by_socket, remote, info.mcp_http) {
        (false, ..) => "off",
        (true, true, true, _) => "on, over stdio through the socket its connection forwards",
        (true, true, false, _) => "on, over stdio through the socket file (no network)",
        (true, false, _, true) => "on, over http",
        (true, false, _, false) => "on, over stdio",
    };
    writeln!(out, "  room tools: {room_tools}")?;
    let methods: Vec<String> = (info.auth_methods.iter())
        .map(|m| format!("{} ({})", m.name, m.id))
        .collect();
    writeln!(out, "  auth methods: {}", none_or_list(&methods))?;
    Ok(out)
}

/// The slash commands `session` offers, as `/name`: their list arrives just after
/// `session/new` (none after a second and a half).
async fn slash_commands(session: &mut NewSession) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(1500);
    while let Ok(Some(event)) = tokio::time::timeout_at(deadline, session.events.recv()).await {
        if let AgentEvent::Commands(list) = event {
            return list.into_iter().map(|c| format!("/{}", c.name)).collect();
        }
    }
    Vec::new()
}

/// `items` joined with commas, or "none".
fn none_or_list(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

/// A file operation on an agent's host slower than this is most likely the remote user's
/// shell starting (`sshd` runs every command through it): worth a hint.
const SLOW_FILE_OPERATION: Duration = Duration::from_millis(60);

/// The line on how long one file operation takes on an agent's host, in the connection the
/// first one opened (the median of three openings of its workspace), with a hint when that
/// is slow.
async fn file_operation_line(
    link: std::sync::Arc<crate::remote::Link>,
    root: std::path::PathBuf,
) -> Result<String> {
    let mut took = tokio::task::spawn_blocking(move || {
        (0..3)
            .map(|_| {
                let start = std::time::Instant::now();
                Folder::open_remote(link.clone(), &root, Path::new("")).map(|_| start.elapsed())
            })
            .collect::<Result<Vec<Duration>, _>>()
    })
    .await?
    .map_err(|e| anyhow::anyhow!("the workspace cannot be opened: {e}"))?;
    took.sort();
    let median = took[1];
    let hint = match median > SLOW_FILE_OPERATION {
        true => {
            " (slow: the remote user's shell starts for each one; keep its ~/.bashrc quiet \
             when not interactive, see docs/configuration.md)"
        }
        false => "",
    };
    Ok(format!(
        "  file operations on its host: {} ms each{hint}\n",
        median.as_millis()
    ))
}

/// The lines on an agent's worktrees, as its own commands see them (on its host, for the
/// SSH runner).
async fn worktree_lines(w: crate::workspace::Worktrees) -> Result<String> {
    use std::fmt::Write;
    let w = tokio::task::spawn_blocking(move || w.list().map(|made| (w, made)));
    let (w, made) = w.await?.map_err(|e| anyhow::anyhow!("worktree: {e}"))?;
    let mut out = String::new();
    writeln!(
        out,
        "  worktree: each room on a branch {}… of {} ({} made)",
        w.branch_prefix,
        w.repository.display(),
        made.len()
    )?;
    for listed in made {
        writeln!(out, "    {} in {}", listed.branch, listed.path.display())?;
    }
    Ok(out)
}

/// What the check says of `session`, a new session of `process` (after `out`, what it said
/// before): its modes, its approval switches, its options and slash commands. `Err` (with all
/// of it) when the gateway would not use the agent, or `strict` and its dialect does not
/// know a mode or an approval option.
async fn session_lines(
    agent: &AgentConfig,
    process: &AcpAgent,
    mut session: NewSession,
    strict: bool,
    mut out: String,
) -> Result<String> {
    use std::fmt::Write;
    writeln!(out, "  session/new: ok ({})", session.id())?;
    writeln!(out, "  signed in: yes (or no sign-in needed)")?;
    let policy = super::settings_policy(agent);
    let modes = modes::report(process, &policy, &session).await?;
    out.push_str(&modes.text);
    let (approvals, new_options) =
        modes::approval_options(&policy, &process.known_modes(), &session.settings)?;
    out.push_str(&approvals);
    let options: Vec<String> = (session.settings.options.iter())
        .map(|o| match &o.category {
            Some(category) => format!("{} ({category})", o.id),
            None => o.id.clone(),
        })
        .collect();
    writeln!(out, "  config options: {}", none_or_list(&options))?;
    let commands = slash_commands(&mut session).await;
    writeln!(out, "  slash commands: {}", none_or_list(&commands))?;
    let unknown: Vec<String> = (modes.new_modes.iter().cloned())
        .chain(new_options.iter().map(|o| format!("option {o}")))
        .collect();
    match (modes.unfenced, strict && !unknown.is_empty()) {
        (Some(why), _) => Err(anyhow::anyhow!(
            "{out}  the gateway would not use this agent: {why}"
        )),
        (None, true) => Err(anyhow::anyhow!(
            "{out}  modes or approval options its dialect does not know (--strict-modes): {}",
            unknown.join(", ")
        )),
        (None, false) => Ok(out),
    }
}

async fn check_agent(
    config: &Config,
    agent: &AgentConfig,
    probe: &mut Probe,
    strict: bool,
) -> Result<String> {
    use std::fmt::Write;
    let isolation = isolation(config, agent, probe).map_err(|e| anyhow::anyhow!("sandbox: {e}"))?;
    let mut out = String::new();
    writeln!(out, "  sandbox: {}", isolation.summary)?;
    writeln!(out, "  sees:")?;
    for line in &isolation.sees {
        writeln!(out, "    {line}")?;
    }
    let spec = process_spec(agent, &config.timeouts, isolation);
    if let Some(w) = workspace(agent, &spec).worktrees().cloned() {
        out.push_str(&worktree_lines(w).await?);
    }
    let process = AcpAgent::start(&spec).await?;
    let info = process.info().clone();
    out.push_str(&agent_lines(agent, &info, process.dialect())?);
    // On other hosts, the workspace is there, never on this disk.
    let (root, remote) = (agent.workspace_root(), spec.remote.clone());
    let folder = tokio::task::spawn_blocking(move || match remote {
        Some(link) => Folder::open_remote(link, &root, Path::new("")),
        None => Folder::open(&root, Path::new("")),
    })
    .await?
    .map_err(|e| anyhow::anyhow!("the workspace cannot be opened: {e}"))?;
    if let Some(link) = spec.remote.clone() {
        out.push_str(&file_operation_line(link, agent.workspace_root()).await?);
    }
    let session = process
        .new_session(&std::sync::Arc::new(folder), None)
        .await;
    let result = match session {
        Ok(session) => session_lines(agent, &process, session, strict, out).await,
        // Not signed in: what to do about it, not a failure of the check.
        Err(e) if e.is_auth_required() => {
            writeln!(out, "  signed in: no (session/new asks to sign in: {e})")?;
            for m in &info.auth_methods {
                writeln!(out, "    {}", crate::render::strings::auth_method_line(m))?;
            }
            Ok(out)
        }
        Err(e) => Err(anyhow::anyhow!("session/new failed: {e}")),
    };
    process.shutdown().await;
    result
}
