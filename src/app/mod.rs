//! Wiring: starts the store, the agents and their Matrix users, supervises their tasks and
//! shuts everything down on SIGINT/SIGTERM.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::acp::{ProcessSpec, Supervised};
use crate::config::{AccessConfig, AgentConfig, Config, TimeoutsConfig};
use crate::core::access::AccessList;
use crate::core::agent::AgentPort;
use crate::core::budget::BudgetPolicy;
use crate::core::catch_up::CatchUpBounds;
use crate::core::context::{AgentContext, Handoff};
use crate::core::gateway::{AccessRules, Gateway, GatewaySettings, RoomRules};
use crate::core::hearing::Transcriber;
use crate::core::pool::{Pool, PoolSettings};
use crate::core::room_tools::RoomToolHost;
use crate::core::settings_policy::SettingsPolicy;
use crate::matrix::{MatrixError, MatrixSecurity};
use crate::mcp::McpHost;
use crate::model::ids::AgentId;
use crate::state_dir;
use crate::store::Store;
use isolation::Isolation;

mod check;
mod isolation;
mod metrics_http;
mod migrate;
mod reload;
pub mod remote_helper;
mod start;
mod webhooks_http;

pub use check::check_from_file;
pub use migrate::migrate;

/// The log levels of `run`: what the gateway does, and only warnings of the libraries.
pub const RUN_LOG_LEVELS: &str = "info,matrix_sdk=warn,matrix_sdk::http_client=off,matrix_sdk_base=warn,matrix_sdk_crypto=error,matrix_sdk_sqlite=warn,sqlx=warn,rmcp=warn";
/// The log levels of `check`, whose report is what matters: warnings and errors only.
pub const CHECK_LOG_LEVELS: &str = "warn,matrix_sdk::http_client=off";

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One line of text per event, for people.
    #[default]
    Text,
    /// One JSON object per line (`timestamp`, `level`, `target`, `fields`), for log
    /// collectors.
    Json,
}

/// Sets up logging to stderr at `levels` (`RUN_LOG_LEVELS`, `CHECK_LOG_LEVELS`) in `format`;
/// `RUST_LOG` overrides the levels.
pub fn init_tracing(levels: &str, format: LogFormat) {
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| levels.into());
    if format == LogFormat::Json {
        let _ = tracing_subscriber::fmt()
            .json()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .try_init();
        return;
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// How to start `agent`'s process, in the place `isolation` gives it.
fn process_spec(
    agent: &AgentConfig,
    timeouts: &TimeoutsConfig,
    isolation: Isolation,
) -> ProcessSpec {
    ProcessSpec {
        agent_id: agent.agent_id(),
        command: agent.command.clone(),
        args: agent.args.clone(),
        env: agent.env.clone(),
        inherit_env: agent.inherit_env.clone(),
        cwd: agent.workspace_root(),
        home: isolation.home,
        sandbox: isolation.sandbox,
        container: isolation.container,
        remote: isolation.remote,
        dialect: agent.dialect.clone(),
        initialize_timeout: Duration::from_secs(timeouts.initialize_secs),
        session_timeout: Duration::from_secs(timeouts.new_session_secs),
        file_access: agent.file_access,
        terminals: agent.terminals,
        mcp_servers: agent.mcp_servers.iter().filter_map(|m| m.spec()).collect(),
    }
}

/// `agent`'s workspace; in worktree mode, git runs there the way the agent runs its
/// commands (`spec`): in its sandbox, or a one-off container of its image, where the hooks
/// and configuration it may write in the repository reach nothing of the gateway's.
fn workspace(agent: &AgentConfig, spec: &ProcessSpec) -> crate::workspace::Workspace {
    let worktrees = agent.worktrees().map(|mut w| {
        if let Some(link) = &spec.remote {
            // On the agent's host, every step is done there, git in the host's sandbox.
            w.remote = Some(link.clone());
        } else if spec.boxed() {
            let spec = spec.clone();
            w.launcher = Some(Arc::new(move |cwd, args| {
                spec.command_line("git", args, cwd, &[]).map(|l| l.command)
            }));
        }
        w
    });
    crate::workspace::Workspace::new(&agent.workspace)
        .with_worktrees(worktrees)
        .on_host(spec.remote.clone())
}

/// The mode `agent`'s sessions are put in, which of its modes ask, and what people who are
/// not admins may choose of its settings, from its config.
fn settings_policy(agent: &AgentConfig) -> SettingsPolicy {
    let configured = &agent.settings;
    SettingsPolicy {
        initial_mode: configured.initial_mode.clone(),
        asking_modes: configured.asking_modes.clone(),
        choosable_modes: configured.modes.clone(),
        choosable_values: configured.options.clone(),
    }
}

/// `sidekicks run`: loads the config and runs until SIGINT or SIGTERM.
pub async fn run_from_file(path: &Path) -> Result<()> {
    let config = Config::load(path)?;
    let shutdown = CancellationToken::new();
    let trigger = shutdown.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutting down");
        trigger.cancel();
    });
    run(config, shutdown).await
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// Makes the state folder readable by the gateway's user only (again, once the Matrix users
/// wrote into it).
fn private(config: &Config) -> Result<()> {
    state_dir::make_private(&config.state_dir).with_context(|| {
        format!(
            "cannot make state_dir {} private",
            config.state_dir.display()
        )
    })
}

/// Runs the gateway until `shutdown` is cancelled.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<()> {
    // SIGHUP reloads the config; taken from the start, so one sent while agents start does
    // not end the gateway.
    let hangups = reload::hangups();
    private(&config)?;
    for warning in config.warnings() {
        tracing::warn!("{warning}");
    }
    let store_url = config.store_url();
    let store = Store::connect(&store_url).await.with_context(|| {
        format!(
            "cannot open the database {}",
            crate::store::redact_url(&store_url)
        )
    })?;
    tracing::info!(store = %crate::store::redact_url(&store_url), "state database open");
    // Shared by every agent: a reload (SIGHUP) changes them everywhere.
    let live = reload::LiveSettings::from_config(&config);

    let security = matrix_security(&config)?;
    // Served before any agent starts: an agent without network gets their socket file bound
    // into its sandbox.
    let room_tools = start_room_tools(&config).await;
    let pool_settings = pool_settings(&config);
    let started = start::start_agents(&config, &security, pool_settings.max_running).await?;
    // The Matrix users have written their sessions and stores by now.
    private(&config)?;
    let pool = pool(pool_settings, &started);
    let access = access_rules(&config.access);
    let agent_ids: Vec<AgentId> = started.iter().map(|a| a.config.agent_id()).collect();
    let (handoffs, handed) = mpsc::channel(crate::core::queues::HANDOFFS);
    let shared = Shared {
        config: &config,
        store: &store,
        live: &live,
        access: &access,
        pool: &pool,
        room_tools: &room_tools,
        handoffs: &handoffs,
        hearing: hearing(&config)?,
        budgets: Arc::new(config.budgets.policy(&config.schedules.time_zone)),
    };
    let contexts = started.iter().map(|agent| shared.context(agent)).collect();
    let (users, processes): (Vec<_>, Vec<_>) = (started.into_iter())
        .map(|agent| (agent.user, agent.process))
        .unzip();
    // Shared with everything that holds them: a reload (SIGHUP) changes them everywhere.
    reload::watch(hangups, &config, &access, live, shutdown.child_token());
    let gateway = Arc::new(Gateway::new(
        contexts,
        access,
        store.clone(),
        pool.clone(),
        gateway_settings(&config),
    ));
    gateway.clean_up_previous_run().await;
    let helpers = start_helpers(&gateway, handed, &pool, store.clone(), &config);

    let timeline_limit = config.continuity.sync_timeline_limit;
    let tasks = (users.into_iter())
        .map(|user| {
            let (gateway, shutdown) = (gateway.clone(), shutdown.clone());
            async move { user.run(gateway, timeline_limit, shutdown).await }
        })
        .collect();
    serve_http(&config, agent_ids, store, &helpers).await;
    tracing::info!(agents = processes.len(), "Sidekicks is running");
    let failures = supervise(tasks).await;
    shut_down(&gateway, helpers, processes).await;
    match failures.is_empty() {
        true => Ok(()),
        false => Err(anyhow::anyhow!(failures.join("; "))),
    }
}

/// What every agent's context shares: the store, the settings a reload changes, the access
/// lists, the pool, the room tools and the hand-off queue.
struct Shared<'a> {
    /// The config the agents were started from.
    config: &'a Config,
    /// The database.
    store: &'a Store,
    /// `[streaming]`, `[permissions]`, `[display] show`, as a reload leaves them.
    live: &'a reload::LiveSettings,
    /// Who may prompt, approve and administer.
    access: &'a AccessRules,
    /// The agent process pool.
    pool: &'a Arc<Pool>,
    /// The room tools' host, if any agent has them.
    room_tools: &'a Option<Arc<dyn RoomToolHost>>,
    /// Where finished answers go to be handed to other agents.
    handoffs: &'a mpsc::Sender<Handoff>,
    /// Where voice notes are heard, if anywhere (one service for all agents).
    hearing: Option<Arc<dyn Transcriber>>,
    /// What agents may spend in each room.
    budgets: Arc<BudgetPolicy>,
}

impl Shared<'_> {
    /// The context every channel of `agent` shares.
    fn context(&self, agent: &start::StartedAgent) -> Arc<AgentContext> {
        let (config, access) = (self.config, self.access);
        Arc::new(AgentContext {
            agent_id: agent.config.agent_id(),
            display_name: agent.config.display_name.clone(),
            user_id: agent.config.user_id(),
            agent: agent.process.clone(),
            chat: agent.chat.clone(),
            store: self.store.clone(),
            workspace: agent.workspace.clone(),
            stream: self.live.stream.clone(),
            command_prefix: config.commands.prefix.clone(),
            approvers: access.approvers.clone(),
            admins: access.admins.clone(),
            approver_min_power: config.access.approver_min_power,
            settings: settings_policy(agent.config),
            allowed: access.allowed.clone(),
            agent_users: config.agents.iter().map(AgentConfig::user_id).collect(),
            permissions: self.live.permissions.clone(),
            verbosity: self.live.verbosity.clone(),
            media: config.media.limits(),
            hearing: self.hearing.clone(),
            budgets: self.budgets.clone(),
            reinject_max_chars: config.continuity.reinject_max_chars,
            max_waiting: config.queue.max_waiting,
            queue_mode: config.queue.mode,
            status_reactions: config.display.status_reactions,
            rerun_interrupted: config.continuity.rerun_interrupted,
            rerun_edited: config.continuity.rerun_edited,
            quiet_note: (config.timeouts.quiet_turn_secs > 0)
                .then(|| Duration::from_secs(config.timeouts.quiet_turn_secs)),
            pool: self.pool.clone(),
            room_tools: self.room_tools.clone().filter(|_| agent.config.room_tools),
            handoffs: Some(self.handoffs.clone()),
        })
    }
}

/// The speech-to-text service voice notes are heard by, when `[voice]` names one.
fn hearing(config: &Config) -> Result<Option<Arc<dyn Transcriber>>> {
    let voice = &config.voice;
    let Some(url) = voice.transcribe_url.clone() else {
        return Ok(None);
    };
    let key = voice
        .key()
        .map_err(|e| anyhow::anyhow!("[voice] key: {e}"))?;
    tracing::info!(model = %voice.model, "voice notes are heard");
    Ok(Some(Arc::new(crate::transcribe::HttpTranscriber::new(
        url,
        key,
        voice.model.clone(),
        voice.language.clone(),
        Duration::from_secs(voice.timeout_secs),
    ))))
}

/// How the agents' Matrix users guard their keys and whom they believe (`[matrix]`).
fn matrix_security(config: &Config) -> Result<MatrixSecurity> {
    Ok(MatrixSecurity {
        store_passphrase: config
            .matrix
            .store_passphrase()
            .map_err(|e| anyhow::anyhow!("matrix.store_passphrase: {e}"))?,
        require_cross_signed: config.matrix.require_cross_signed,
        require_verified_identity: config.matrix.require_verified_identity,
    })
}

/// The pool of the agents that started.
fn pool(settings: PoolSettings, started: &[start::StartedAgent]) -> Arc<Pool> {
    let agents = (started.iter())
        .map(|agent| {
            let port: Arc<dyn AgentPort> = agent.process.clone();
            let name = agent.config.display_name.clone();
            (agent.config.agent_id(), name, port)
        })
        .collect();
    Pool::new(settings, agents)
}

/// `[pool]` as the pool takes it (0 meaning no limit, never).
fn pool_settings(config: &Config) -> PoolSettings {
    PoolSettings {
        max_running: (config.pool.max_running > 0).then_some(config.pool.max_running),
        idle_stop: (config.pool.idle_stop_secs > 0)
            .then(|| Duration::from_secs(config.pool.idle_stop_secs)),
    }
}

/// The gateway's settings in `config`: the command prefix, `[rooms]`, the catch-up bounds.
fn gateway_settings(config: &Config) -> GatewaySettings {
    GatewaySettings {
        prefix: config.commands.prefix.clone(),
        rules: RoomRules {
            handoff: config.rooms.handoff,
            handoff_max_hops: config.rooms.handoff_max_hops,
            threads: config.rooms.threads,
        },
        catch_up: CatchUpBounds {
            max_events: config.continuity.catch_up_max_events,
            max_age: Duration::from_secs(config.continuity.catch_up_max_hours * 3600),
        },
        schedules: config.schedules.clone(),
    }
}

/// Serves the metrics and health endpoints where `[metrics] listen` says, and the
/// webhooks where `[webhook_listener] listen` says, until `stop`; one that cannot be
/// served is logged, and the gateway goes on without it.
async fn serve_http(config: &Config, agents: Vec<AgentId>, store: Store, stop: &CancellationToken) {
    if let Some(listen) = &config.metrics.listen
        && let Err(e) = metrics_http::serve(listen, agents, stop.clone()).await
    {
        tracing::error!(address = %listen, error = %e, "metrics and health cannot be served");
    }
    let Some(listen) = &config.webhook_listener.listen else {
        return;
    };
    let served = webhooks_http::serve(
        listen,
        &config.webhook_listener,
        &config.webhooks,
        store,
        stop.clone(),
    );
    if let Err(e) = served.await {
        tracing::error!(address = %listen, error = %e, "webhooks cannot be served");
    }
}

/// How long what is pruned is kept (`[retention]`).
fn retention(config: &Config) -> Retention {
    Retention {
        handled: config
            .retention
            .handled(config.continuity.catch_up_max_hours),
        transcript: config.retention.transcript(),
    }
}

/// Starts the gateway's helper tasks: hand-offs from `handed` and the outbox (until the
/// gateway shuts down), the pool's idle stops and the store's pruning (until the token
/// returned is cancelled).
fn start_helpers(
    gateway: &Arc<Gateway>,
    handed: mpsc::Receiver<Handoff>,
    pool: &Arc<Pool>,
    store: Store,
    config: &Config,
) -> CancellationToken {
    let helpers = CancellationToken::new();
    tokio::spawn(gateway.clone().run_handoffs(handed));
    tokio::spawn(gateway.clone().run_outbox());
    tokio::spawn(gateway.clone().run_schedules());
    tokio::spawn(pool.clone().run_idle_stops(helpers.clone()));
    tokio::spawn(run_retention(store, retention(config), helpers.clone()));
    helpers
}

/// Stops in order once the sync loops ended: turns still running are cancelled and
/// marked in their rooms before the helpers and then the agents stop.
async fn shut_down(
    gateway: &Gateway,
    helpers: CancellationToken,
    processes: Vec<Arc<dyn Supervised>>,
) {
    gateway.shutdown(Duration::from_secs(10)).await;
    helpers.cancel();
    for process in processes {
        process.shutdown().await;
    }
    tracing::info!("stopped");
}

/// Waits for every agent user's sync loop to end; returns why those that failed did.
async fn supervise(mut tasks: JoinSet<Result<(), MatrixError>>) -> Vec<String> {
    let mut failures = Vec::new();
    while let Some(result) = tasks.join_next().await {
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::error!(error = %e, "an agent's Matrix user stopped");
                failures.push(e.to_string());
            }
            Err(e) => {
                tracing::error!(error = %e, "a sync task panicked");
                failures.push(e.to_string());
            }
        }
    }
    failures
}

/// The access lists `access` configures, each less the users it denies.
fn access_rules(access: &AccessConfig) -> AccessRules {
    let deny = &access.deny;
    AccessRules {
        allowed: AccessList::new(&access.allowed_users).denying(deny),
        approvers: AccessList::new(access.approvers()).denying(deny),
        admins: AccessList::new(access.admins()).denying(deny),
    }
}

/// Serves the room tools on loopback when any agent has them; a failure leaves every agent
/// without them (logged), never the gateway stopped.
async fn start_room_tools(config: &Config) -> Option<Arc<dyn RoomToolHost>> {
    if !config.agents.iter().any(|a| a.room_tools) {
        return None;
    }
    // Agents run the gateway's own program to reach the tools over stdio.
    let program = match std::env::current_exe() {
        Ok(program) => program,
        Err(e) => {
            tracing::error!(error = %e, "the gateway's own program cannot be found; no room tools");
            return None;
        }
    };
    // Agents without network reach them through a socket file bound into their sandbox, and
    // agents on other hosts through a socket their connection forwards to it.
    let by_socket = (config.agents.iter()).any(|a| a.room_tools_by_socket());
    let socket = by_socket.then(|| isolation::room_tools_socket(&config.state_dir));
    match McpHost::start(program, socket).await {
        Ok(host) => Some(Arc::new(host)),
        Err(e) => {
            tracing::error!(error = %e, "the room tools cannot be served on loopback; no room tools");
            None
        }
    }
}

/// How long the database keeps what it no longer needs.
struct Retention {
    /// Handled-event markers older than this go.
    handled: Duration,
    /// Transcript lines older than this go (`None`: kept).
    transcript: Option<Duration>,
}

/// How often old handled markers and transcript lines are pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// Prunes the database at start-up and then every hour, until `stop`.
async fn run_retention(store: Store, retention: Retention, stop: CancellationToken) {
    loop {
        let now = crate::store::now_ms();
        let before = |age: Duration| now - age.as_millis() as i64;
        match store
            .prune(before(retention.handled), retention.transcript.map(before))
            .await
        {
            Ok(pruned) if pruned != Default::default() => {
                tracing::info!(
                    handled = pruned.handled,
                    transcript = pruned.transcript,
                    "pruned old records"
                );
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "could not prune old records"),
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(PRUNE_EVERY) => {}
        }
    }
}
