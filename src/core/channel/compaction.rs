//! The room is told when its agent summarises its context to go on (`compaction_update`):
//! one short notice once the summary is made, which the agent's next usage report completes
//! with what it freed, and one when it fails. Reports of a summary still being made, or
//! cancelled, are only logged: the turn's own view shows the agent is working.

use super::Channel;
use crate::model::OutMessage;
use crate::model::agent::{CompactionReport, CompactionState};
use crate::model::ids::EventId;
use crate::render::strings;

/// What the room was told of the agent's summaries.
#[derive(Debug, Default)]
pub(super) struct Compactions {
    /// The last summary the room was told of (the agent may report it again).
    told: Option<String>,
    /// The notice of the last summary, the tokens the context held before it and the
    /// window's size, until a usage report says what it freed.
    awaiting_usage: Option<(EventId, u64, u64)>,
}

impl Channel {
    /// The agent reported a summary of its context.
    pub(super) async fn on_compaction(&mut self, report: CompactionReport) {
        let ctx = self.ctx.clone();
        tracing::info!(agent = %ctx.agent_id, room = %self.key.room, id = %report.id, state = ?report.state, "the agent summarises its context");
        let done = match report.state {
            CompactionState::Running | CompactionState::Cancelled => return,
            CompactionState::Done => true,
            CompactionState::Failed => false,
        };
        if self.compactions.told.as_deref() == Some(report.id.as_str()) {
            return;
        }
        self.compactions.told = Some(report.id);
        if !done {
            let text = strings::context_summary_failed(&ctx.display_name, report.error.as_deref());
            self.voice().notice(text).await;
            return;
        }
        let held = self.reported.context_window();
        let text = strings::context_summarised(&ctx.display_name, held);
        let note = self.voice().notice(text).await;
        self.compactions.awaiting_usage = note.zip(held).map(|(n, (used, size))| (n, used, size));
    }

    /// The agent reported its context holds `used` tokens: a summary's notice waiting to
    /// say what it freed says it.
    pub(super) async fn usage_after_compaction(&mut self, used: u64) {
        let Some((note, before, size)) = self.compactions.awaiting_usage.take() else {
            return;
        };
        if used >= before {
            return;
        }
        let text = strings::context_summarised_freed(&self.ctx.display_name, before, used, size);
        self.voice().edit(&note, &OutMessage::notice(text)).await;
    }
}
