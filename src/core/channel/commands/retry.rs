//! `!retry`: sends the last prompt of this conversation whose turn was cut (stopped,
//! failed, or ended by a crash) to the agent again, as its author wrote it.

use super::{AgentCommand, Call, Running};
use crate::core::channel::Channel;
use crate::core::channel::queue::Queued;
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::inbound::IncomingMessage;
use crate::model::ids::UserId;
use crate::render::strings;
use crate::store::{LogFailure, PendingKind, TranscriptEntry};

pub(crate) static COMMAND: AgentCommand = AgentCommand {
    spec: Spec {
        name: "retry",
        aliases: &[],
        args: "",
        scope: Scope::Agent,
        who: Who::Allowed,
        during_turn: DuringTurn::Refused,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Conversation,
        help: "send the last prompt that was cut (stopped, failed, a crash) again",
        details: "Finds the last prompt of this conversation and, when its turn was cut (someone \
                      stopped it, the agent failed or ran out of tokens, or the gateway stopped \
                      under it), sends it to the agent again as its author wrote it, after \
                      what already waits. Kept for a restart like any waiting prompt.",
    },
    run,
    answers: None,
};

fn run<'a>(channel: &'a mut Channel, call: Call<'a>) -> Running<'a> {
    Box::pin(async move { channel.retry(call).await })
}

/// How the turns end whose prompt `!retry` sends again: cut before the agent was done.
const CUT: &[&str] = &[
    "cancelled",
    "error",
    "interrupted",
    "max_tokens",
    "max_turn_requests",
];

/// The last prompt of `transcript` (oldest first) when its turn was cut: its last answer
/// ended as one of [`CUT`], or it has none (the gateway stopped under it before the agent
/// said anything). `None` when the last prompt was answered (at its last attempt: a retry
/// adds an answer, not the prompt again), or there is none.
fn last_cut(transcript: &[TranscriptEntry]) -> Option<&TranscriptEntry> {
    let at = (transcript.iter()).rposition(|e| e.role == "user" && e.event_id.is_some())?;
    let answer = transcript[at + 1..]
        .iter()
        .rev()
        .find(|e| e.role == "agent");
    let cut = match answer {
        None => true,
        Some(answer) => (answer.stop_reason.as_deref()).is_some_and(|r| CUT.contains(&r)),
    };
    cut.then(|| &transcript[at])
}

impl Channel {
    /// `!retry`: the last prompt, when its turn was cut, waits to run again.
    async fn retry(&mut self, call: Call<'_>) {
        let ctx = self.ctx.clone();
        let transcript = match ctx.store.transcript(&self.key).await {
            Ok(transcript) => transcript,
            Err(e) => {
                tracing::error!(agent = %ctx.agent_id, room = %self.key.room, error = %e, "could not read the transcript for !retry");
                return self.notice(strings::RETRY_UNREADABLE).await;
            }
        };
        let Some(cut) = last_cut(&transcript) else {
            return self.notice(strings::NOTHING_TO_RETRY).await;
        };
        let event_id = cut.event_id.clone().expect("a prompt with its event");
        let Ok(sender) = UserId::try_from(cut.sender.clone()) else {
            tracing::error!(agent = %ctx.agent_id, room = %self.key.room, sender = %cut.sender, "the transcript holds a sender that is no user ID");
            return self.notice(strings::RETRY_UNREADABLE).await;
        };
        if self.queue.holds(&event_id) {
            return self.notice(strings::RETRY_ALREADY_WAITS).await;
        }
        let message = IncomingMessage {
            agent_id: ctx.agent_id.clone(),
            room_id: self.key.room.clone(),
            event_id,
            sender,
            body: cut.body.clone(),
            thread: self.key.thread.clone(),
            ..Default::default()
        };
        // Kept for a restart: it is taken up again before anything else that waits.
        let pending = message.pending_input(PendingKind::Rerun);
        (ctx.store.requeue(&pending).await).or_log("could not keep the retried prompt");
        tracing::info!(agent = %ctx.agent_id, room = %self.key.room, event = %message.event_id, by = %call.by, "a cut prompt runs again (!retry)");
        let said = strings::retrying(message.sender.as_str(), &message.body);
        self.queue.push_back(Queued::retried(message));
        self.notice(said).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(role: &str, event: Option<&str>, body: &str, stop: Option<&str>) -> TranscriptEntry {
        TranscriptEntry {
            role: role.into(),
            sender: "@alice:x".into(),
            event_id: event.map(Into::into),
            body: body.into(),
            stop_reason: stop.map(Into::into),
            created_at: 0,
        }
    }

    #[test]
    fn the_last_prompt_is_retried_only_when_its_turn_was_cut() {
        let answered = entry("agent", None, "done", Some("end_turn"));
        let prompt = |body| entry("user", Some("$p"), body, None);
        assert!(last_cut(&[]).is_none());
        assert!(last_cut(&[prompt("a"), answered.clone()]).is_none());
        for stop in ["cancelled", "error", "interrupted", "max_tokens"] {
            let cut = entry("agent", None, "half", Some(stop));
            let transcript = [prompt("a"), answered.clone(), prompt("b"), cut];
            let found = last_cut(&transcript);
            assert_eq!(found.map(|e| e.body.as_str()), Some("b"), "{stop}");
        }
        // Cut before the agent said anything: no answer recorded.
        let transcript = [prompt("a"), answered.clone(), prompt("b")];
        assert_eq!(last_cut(&transcript).map(|e| e.body.as_str()), Some("b"));
        // A refusal is the agent's answer, not a cut.
        let refused = entry("agent", None, "no", Some("refusal"));
        assert!(last_cut(&[prompt("a"), refused]).is_none());
        // Retried until answered: its last attempt counts.
        let cut = entry("agent", None, "half", Some("cancelled"));
        let transcript = [prompt("b"), cut.clone(), answered.clone()];
        assert!(last_cut(&transcript).is_none());
        let transcript = [prompt("b"), answered.clone(), cut.clone()];
        assert!(last_cut(&transcript).is_some());
        // Only the last prompt counts: an earlier cut one was followed by more.
        let cut = entry("agent", None, "half", Some("cancelled"));
        assert!(last_cut(&[prompt("a"), cut, prompt("b"), answered]).is_none());
    }
}
