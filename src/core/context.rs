//! What every channel of one agent shares: its process, its Matrix user, its settings.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::core::access::AccessList;
use crate::core::agent::AgentPort;
use crate::core::budget::BudgetPolicy;
use crate::core::chat::ChatPort;
use crate::core::hearing::Transcriber;
use crate::core::poll::PermissionSettings;
use crate::core::pool::Pool;
use crate::core::reloadable::Reloadable;
use crate::core::settings_policy::SettingsPolicy;
use crate::core::view::stream::StreamSettings;
use crate::model::ids::{AgentId, EventId, RoomId, UserId};
use crate::model::media::MediaLimits;
use crate::model::{QueueMode, Verbosity};
use crate::store::{LogFailure, Store};
use crate::workspace::Workspace;

/// Everything a channel needs that is the same for all rooms of one agent.
#[derive(Clone)]
pub struct AgentContext {
    /// The agent's configured ID.
    pub agent_id: AgentId,
    /// The agent's display name, used in messages.
    pub display_name: String,
    /// The agent's Matrix user ID (the author of its replies in the transcript).
    pub user_id: UserId,
    /// The agent process.
    pub agent: Arc<dyn AgentPort>,
    /// The agent's Matrix user.
    pub chat: Arc<dyn ChatPort>,
    /// The database.
    pub store: Store,
    /// Where each room's conversation works: the `cwd` of its sessions.
    pub workspace: Workspace,
    /// How replies stream (a turn reads it when it starts; a reload changes it).
    pub stream: Reloadable<StreamSettings>,
    /// The chat command prefix, for help texts.
    pub command_prefix: String,
    /// Who may answer permission polls.
    pub approvers: AccessList,
    /// The power level an approver must also have in the room to answer a poll (`None`:
    /// being an approver is enough).
    pub approver_min_power: Option<i64>,
    /// Who may choose any mode or option value; the others choose within `settings`.
    pub admins: AccessList,
    /// What people who are not admins may choose of this agent's settings.
    pub settings: SettingsPolicy,
    /// Who may prompt: the agent's stderr is shown only in rooms where everyone is one of
    /// them (or one of the gateway's agents).
    pub allowed: AccessList,
    /// The Matrix users of all the gateway's agents.
    pub agent_users: Vec<UserId>,
    /// How permission polls behave (a poll reads it when it opens; a reload changes it).
    pub permissions: Reloadable<PermissionSettings>,
    /// What a room shows of the agent's work until someone changes it with `!show` (a
    /// reload changes it).
    pub verbosity: Reloadable<Verbosity>,
    /// What the agent takes of people's files.
    pub media: MediaLimits,
    /// What agents may spend in each room (`[budgets]`; the same for every agent).
    pub budgets: Arc<BudgetPolicy>,
    /// Where voice notes are heard (`[voice]`; `None`: they are files like any sound).
    pub hearing: Option<Arc<dyn Transcriber>>,
    /// Most characters of earlier conversation re-injected into a new session (0: none).
    pub reinject_max_chars: usize,
    /// Most prompts waiting behind a running turn of one conversation (`queue.max_waiting`);
    /// past it a prompt is refused with a notice.
    pub max_waiting: usize,
    /// What a message written while the agent works does where the room has not chosen
    /// with `!queue` (`queue.mode`).
    pub queue_mode: crate::model::QueueMode,
    /// Whether people's messages are marked with status reactions where the room has not
    /// chosen with `!reactions` (`display.status_reactions`).
    pub status_reactions: bool,
    /// How long a turn may show nothing before the room is told how to stop it (`None`:
    /// never).
    pub quiet_note: Option<Duration>,
    /// Whether a prompt whose turn a gateway crash cut runs again at the next start.
    pub rerun_interrupted: bool,
    /// Whether editing the prompt being answered stops the answer and runs the new text.
    pub rerun_edited: bool,
    /// The agent process pool: a turn holds a lease on its agent while it runs.
    pub pool: Arc<Pool>,
    /// Where sessions get their room tools (`None`: the agent gets none).
    pub room_tools: Option<Arc<dyn crate::core::room_tools::RoomToolHost>>,
    /// Where a finished answer goes so the gateway can hand it to the agents it addresses
    /// (`None`: never).
    pub handoffs: Option<mpsc::Sender<Handoff>>,
}

/// An agent's finished answer, for the gateway to hand to the other agents it addresses
/// (when the room allows hand-offs).
#[derive(Debug, Clone)]
pub struct Handoff {
    /// The room.
    pub room_id: RoomId,
    /// The thread the answer was given in: the agents it addresses answer there too.
    pub thread: Option<EventId>,
    /// The agent that answered.
    pub from_agent: AgentId,
    /// The answer's first message: the event the hand-off prompts refer to.
    pub event_id: EventId,
    /// The whole answer (Markdown).
    pub text: String,
}

impl AgentContext {
    /// What a message written during a turn does in `room`: as chosen with `!queue` (read
    /// each time: any agent of the room may change it), else configured.
    pub async fn queue_mode_in(&self, room: &RoomId) -> QueueMode {
        let stored = (self.store.room_queue_mode(room).await)
            .or_log("could not read the room's settings")
            .flatten();
        (stored.as_deref())
            .and_then(QueueMode::parse)
            .unwrap_or(self.queue_mode)
    }

    /// Whether people's messages in `room` get status reactions: as chosen with
    /// `!reactions` (read each time), else configured.
    pub async fn status_reactions_in(&self, room: &RoomId) -> bool {
        (self.store.room_status_reactions(room).await)
            .or_log("could not read the room's settings")
            .flatten()
            .unwrap_or(self.status_reactions)
    }

    /// What `user` is called in `room`, for a line people read: their display name there,
    /// or their user ID when they have none or the room's members cannot be read.
    pub async fn name_in(&self, room: &RoomId, user: &UserId) -> String {
        let members = match self.chat.members(room).await {
            Ok(members) => members,
            Err(e) => {
                tracing::debug!(room = %room, error = %e, "room members unreadable; naming by user ID");
                return user.to_string();
            }
        };
        (members.into_iter())
            .find(|m| &m.user_id == user)
            .and_then(|m| m.display_name)
            .filter(|name| !name.trim().is_empty())
            .unwrap_or_else(|| user.to_string())
    }
}

#[cfg(test)]
impl AgentContext {
    /// The context unit tests start from: agent `id` (`@id:x`, shown as `Demo` for `demo`,
    /// else the ID) with default settings; Alice (`@alice:x`) is allowed, approver and
    /// admin. A test changes what it needs with `AgentContext { …, ..for_tests(…) }`, so a
    /// new setting touches this one place.
    pub fn for_tests(
        id: &str,
        agent: Arc<dyn AgentPort>,
        chat: Arc<dyn ChatPort>,
        store: &Store,
        pool: Arc<Pool>,
    ) -> Self {
        let alice = || AccessList::new(&["@alice:x"]);
        Self {
            agent_id: id.into(),
            display_name: match id {
                "demo" => "Demo".into(),
                other => other.into(),
            },
            user_id: UserId::new(format!("@{id}:x")),
            agent,
            chat,
            store: store.clone(),
            workspace: Workspace::new("/tmp"),
            stream: Reloadable::new(StreamSettings {
                interval: Duration::from_millis(50),
                max_edits: 100,
                max_bytes: 10_000,
                patience: crate::core::view::live::MAX_OUTAGE,
                ..Default::default()
            }),
            command_prefix: "!".into(),
            allowed: alice(),
            agent_users: vec![UserId::new(format!("@{id}:x"))],
            approvers: alice(),
            admins: alice(),
            approver_min_power: None,
            settings: SettingsPolicy::default(),
            permissions: Reloadable::new(PermissionSettings {
                timeout: Duration::from_secs(60),
                ..Default::default()
            }),
            verbosity: Reloadable::new(Verbosity::All),
            media: Default::default(),
            hearing: None,
            budgets: Default::default(),
            reinject_max_chars: 10_000,
            max_waiting: 1_000,
            queue_mode: crate::model::QueueMode::Queue,
            status_reactions: false,
            quiet_note: None,
            rerun_interrupted: false,
            rerun_edited: false,
            pool,
            room_tools: None,
            handoffs: None,
        }
    }
}
