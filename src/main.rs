//! The `sidekicks` command: parses the command line and hands over to [`sidekicks::app`].

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use sidekicks::app::LogFormat;
use sidekicks::model::media::PromptSupport;

/// Brings ACP coding agents into Matrix rooms.
#[derive(Parser)]
#[command(name = "sidekicks", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the gateway.
    Run {
        /// The TOML config file.
        #[arg(long, short)]
        config: PathBuf,
        /// How log lines are written to stderr.
        #[arg(long, value_enum, default_value_t)]
        log_format: LogFormat,
    },
    /// Validate the config, start each agent, open a session and print what it advertises.
    /// Touches Matrix only to ask whether an agent's issued access token is taken.
    Check {
        /// The TOML config file.
        #[arg(long, short)]
        config: PathBuf,
        /// How log lines are written to stderr.
        #[arg(long, value_enum, default_value_t)]
        log_format: LogFormat,
        /// Also fail when an agent offers a mode its dialect does not know (run before a
        /// release against the newest agents: `scripts/check-agent-releases.sh`).
        #[arg(long)]
        strict_modes: bool,
    },
    /// Run the built-in demo agent on stdin/stdout (an ACP agent that needs no API key).
    DemoAgent(DemoArgs),
    /// Copy the gateway's state to another database (stop the gateway first), e.g. from
    /// its SQLite file to PostgreSQL: `--from sqlite://STATE_DIR/sidekicks.db --to
    /// postgres://USER@HOST/DATABASE`. The target must be empty.
    Migrate {
        /// The database the state is in now.
        #[arg(long)]
        from: String,
        /// The database to copy it into (made if it has no tables yet).
        #[arg(long)]
        to: String,
    },
    /// Connect an agent to its session's room tools over stdio (agents run this as the
    /// session's MCP server; it reads the gateway's address and the session's token from
    /// its environment).
    McpStdio,
    /// The SSH runner's helper on an agent's host: the gateway runs it over `ssh` and says
    /// on its stdin what to do (run the agent or one of its commands, or one file operation
    /// beneath a conversation's folder). Install `sidekicks` on each host for it.
    Remote,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Run { config, log_format } => {
            sidekicks::app::init_tracing(sidekicks::app::RUN_LOG_LEVELS, log_format);
            sidekicks::app::run_from_file(&config).await
        }
        Cmd::Check {
            config,
            log_format,
            strict_modes,
        } => {
            // Log lines stay out of the report: on stderr, warnings and errors only.
            sidekicks::app::init_tracing(sidekicks::app::CHECK_LOG_LEVELS, log_format);
            sidekicks::app::check_from_file(&config, strict_modes).await
        }
        Cmd::DemoAgent(args) => sidekicks::acp::demo_agent::run_stdio(args.into_options())
            .await
            .map_err(anyhow::Error::from),
        Cmd::Migrate { from, to } => {
            sidekicks::app::init_tracing(sidekicks::app::CHECK_LOG_LEVELS, LogFormat::default());
            sidekicks::app::migrate(&from, &to).await
        }
        Cmd::Remote => return sidekicks::app::remote_helper::serve(),
        Cmd::McpStdio => {
            let result = sidekicks::mcp::bridge::run().await;
            if let Err(e) = &result {
                eprintln!("sidekicks: {e}");
            }
            // Exits at once: a read of stdin still waiting would hold the runtime open.
            std::process::exit(i32::from(result.is_err()))
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sidekicks: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The demo agent's options (`sidekicks demo-agent`, `docs/demo-agent.md`).
#[derive(clap::Args)]
struct DemoArgs {
    /// Keep each session's conversation in this folder and advertise `loadSession`.
    #[arg(long)]
    sessions: Option<PathBuf>,
    /// With --sessions: offer `session/resume` (no replay) instead of `session/load`.
    #[arg(long, requires = "sessions")]
    resume: bool,
    /// Give sessions two modes and a model choice (`session/set_mode`,
    /// `session/set_config_option`).
    #[arg(long)]
    settings: bool,
    /// Offer these modes instead of `ask` and `code` (comma-separated IDs; implies
    /// --settings). It asks before a tool only in `ask` and `plan`.
    #[arg(long, value_delimiter = ',')]
    modes: Vec<String>,
    /// Start every session in this mode (default: the first).
    #[arg(long)]
    start_mode: Option<String>,
    /// Leave the modes out of the answers to `session/new`, load and resume, though the
    /// sessions have them (as some agents' answers do).
    #[arg(long)]
    hide_modes: bool,
    /// Fail `session/set_mode` to this mode (an agent that cannot switch a session).
    #[arg(long)]
    refuse_mode: Option<String>,
    /// Append every prompt received to this file, one JSON string a line (for tests).
    #[arg(long)]
    prompt_log: Option<PathBuf>,
    /// Advertise taking these kinds of prompt content besides text: any of `image`,
    /// `audio`, `embedded` (comma-separated).
    #[arg(long, value_delimiter = ',')]
    prompt_capabilities: Vec<String>,
    /// Offer sign-in methods and open no session until signed in (`authenticate`).
    #[arg(long)]
    auth: bool,
    /// Advertise taking MCP servers over HTTP (`mcpCapabilities.http`).
    #[arg(long)]
    mcp_http: bool,
    /// Do not advertise steering (`_session/steering`): messages sent during a turn
    /// then wait for the next one.
    #[arg(long)]
    no_steering: bool,
    /// Do not advertise forking sessions (`session/fork`): `!fork` then re-injects the
    /// conversation into a new session.
    #[arg(long)]
    no_fork: bool,
    /// Give sessions the approval switch `allow_all` (a config option of category
    /// `permissions`, as GitHub Copilot's; implies --settings), which `/allow-all on|off`
    /// and `%allow-all on|off` flip.
    #[arg(long)]
    allow_all: bool,
}

impl DemoArgs {
    fn into_options(self) -> sidekicks::acp::demo_agent::DemoOptions {
        let takes = |kind: &str| self.prompt_capabilities.iter().any(|c| c == kind);
        sidekicks::acp::demo_agent::DemoOptions {
            prompt_support: PromptSupport {
                image: takes("image"),
                audio: takes("audio"),
                embedded_context: takes("embedded"),
            },
            sessions: self.sessions,
            resume: self.resume,
            settings: self.settings,
            modes: self.modes,
            start_mode: self.start_mode,
            hide_modes: self.hide_modes,
            refuse_mode: self.refuse_mode,
            allow_all: self.allow_all,
            prompt_log: self.prompt_log,
            auth: self.auth,
            mcp_http: self.mcp_http,
            steering: !self.no_steering,
            fork: !self.no_fork,
        }
    }
}
