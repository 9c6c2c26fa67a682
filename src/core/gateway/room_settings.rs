//! The room's settings as its commands chose them, else as configured: how its threads map
//! onto conversations and whether hand-offs are on; and what its channels report.

use std::collections::HashMap;

use super::Gateway;
use crate::core::routing::Member;
use crate::model::ThreadMode;
use crate::model::ids::{AgentId, ConversationKey};
use crate::store::RoomRouting;

impl Gateway {
    /// How the room's threads map onto conversations, as chosen with `!threads` or
    /// configured.
    pub(super) fn thread_mode(&self, routing: &RoomRouting) -> ThreadMode {
        (routing.threads.as_deref())
            .and_then(ThreadMode::parse)
            .unwrap_or(self.rules.threads)
    }

    /// Whether hand-offs are on in a room with these routing choices.
    pub(super) fn handoff_on(&self, routing: &RoomRouting) -> bool {
        routing.handoff.unwrap_or(self.rules.handoff)
    }

    /// The reports of the room's channels that exist, by agent ID.
    pub(super) async fn reports(
        &self,
        members: &[Member],
        conversation: impl Fn(&AgentId) -> ConversationKey,
    ) -> HashMap<AgentId, crate::core::channel::ChannelReport> {
        let mut reports = HashMap::new();
        for m in members {
            if let Some(report) = self.channels.report(&conversation(&m.agent_id)).await {
                reports.insert(m.agent_id.clone(), report);
            }
        }
        reports
    }
}
