//! What reaches a channel while its turn runs: stop requests, poll answers (typed or by
//! reaction), new prompts (queued) and commands.

use super::queue::Queued;
use super::running_turn::RunningTurn;
use super::{Channel, ChannelInput};
use crate::core::command::Command;
use crate::core::command::registry::DuringTurn;

use crate::core::approvals::{Approvals, OnlyPoll, Picked, Typed};
use crate::core::inbound::IncomingMessage;
use crate::core::poll::{self, Reply};
use crate::model::ids::{EventId, UserId};
use crate::render::cards::PollOutcome;
use crate::render::strings;

impl Channel {
    /// A typed answer to a poll of the running turn: `target` is the poll replied to, if
    /// any.
    pub(super) async fn answer_poll(
        &mut self,
        turn: &mut RunningTurn,
        reply: &Reply,
        target: Option<&EventId>,
        by: &UserId,
        written_at_ms: u64,
    ) -> Picked {
        // A reply names its poll; one that is not open any more is never taken for another
        // (that could approve a tool nobody looked at). Without a reply, the only open poll
        // posted before the answer was written.
        let target = match target {
            Some(t) if turn.approvals().is_poll(t) => t.clone(),
            Some(_) => {
                self.notice(strings::POLL_NOT_OPEN).await;
                return Picked::NoPoll;
            }
            None => match turn.approvals().only_poll_before(written_at_ms) {
                OnlyPoll::One(only) => only.clone(),
                OnlyPoll::None => {
                    self.notice(strings::NO_OPEN_POLL).await;
                    return Picked::NoPoll;
                }
                OnlyPoll::OnlyNewer => {
                    self.notice(strings::POLL_NEWER_THAN_ANSWER).await;
                    return Picked::NoPoll;
                }
                OnlyPoll::Several(count) => {
                    self.notice(strings::several_polls(count)).await;
                    return Picked::NoSuchChoice;
                }
            },
        };
        let picked = (turn.approvals_mut())
            .pick(&self.ctx, &self.key.room, &target, by, |c| {
                poll::pick(c, reply)
            })
            .await;
        self.after_pick(&picked, by).await;
        picked
    }

    /// What the room hears after a pick, and the mode a picked choice switched to.
    pub(super) async fn after_pick(&mut self, picked: &Picked, by: &UserId) {
        match picked {
            Picked::NotApprover => {
                let name = self.ctx.name_in(&self.key.room, by).await;
                self.notice(strings::not_an_approver(&name)).await
            }
            Picked::NoSuchChoice => self.notice(strings::NO_SUCH_CHOICE).await,
            Picked::NoPoll => self.notice(strings::NO_OPEN_POLL).await,
            Picked::AdminOnly { label, mode } => {
                let name = self.ctx.name_in(&self.key.room, by).await;
                self.notice(strings::choice_for_admins(&name, label, mode.as_deref()))
                    .await
            }
            Picked::Answered(Some(mode)) => self.mode_chosen_in_poll(mode.clone(), by).await,
            Picked::Answered(None) | Picked::Stop | Picked::Ignored => {}
        }
    }

    /// Stops the running turn for `by`: `session/cancel`, and every open poll answered
    /// `cancelled` (`from_poll` is the poll whose Stop choice was used, if any).
    pub(super) async fn stop_turn(
        &mut self,
        by: UserId,
        from_poll: Option<&EventId>,
        turn: &mut RunningTurn,
    ) {
        if turn.is_stopped() {
            return;
        }
        tracing::info!(agent = %self.ctx.agent_id, room = %self.key.room, by = %by, "cancelling the turn");
        // Who stopped it, as the room shows them (a local read).
        let name = self.ctx.name_in(&self.key.room, &by).await;
        self.cancel_prompt(turn, |event| match Some(event) == from_poll {
            true => PollOutcome::Stopped { by: name.clone() },
            false => PollOutcome::TurnStopped,
        })
        .await;
        turn.stop(name);
    }

    /// `message` replies to question `target` of the running turn with its typed answer.
    async fn answer_question(
        &mut self,
        turn: &mut RunningTurn,
        target: &EventId,
        message: &IncomingMessage,
    ) {
        let typed = (turn.approvals_mut())
            .answer_text(
                &self.ctx,
                &self.key.room,
                target,
                &message.sender,
                &message.body,
            )
            .await;
        match typed {
            Typed::Answered => {}
            Typed::NotApprover => {
                let name = self.ctx.name_in(&self.key.room, &message.sender).await;
                self.notice(strings::not_an_approver(&name)).await
            }
            Typed::Unreadable(why) => self.notice(strings::unreadable_answer(&why)).await,
            Typed::NoPoll => self.notice(strings::POLL_NOT_OPEN).await,
        }
    }

    /// A typed poll answer carried by `message`; the Stop choice stops the turn.
    pub(super) async fn answer_typed(
        &mut self,
        reply: &Reply,
        message: IncomingMessage,
        turn: &mut RunningTurn,
    ) {
        let target = message.reply_to.as_ref();
        let written_at = message.timestamp_ms;
        if self
            .answer_poll(turn, reply, target, &message.sender, written_at)
            .await
            == Picked::Stop
        {
            self.stop_turn(message.sender.clone(), target, turn).await;
        }
    }

    /// Carries out one input that came while `turn` runs.
    pub(super) async fn handle_input_during_turn(
        &mut self,
        input: ChannelInput,
        turn: &mut RunningTurn,
    ) {
        match input {
            // Sent at start-up, before any turn; should one come later, it waits its turn.
            ChannelInput::Rerun(message) => self.queue.push_back(Queued::rerun(message)),
            ChannelInput::Aside(message) => self.hold_aside(message),
            ChannelInput::Resumed { message, reaction } => {
                self.queue_behind_resumed(message, reaction).await
            }
            ChannelInput::Prompt(message) => self.prompt_during_turn(message, turn).await,
            ChannelInput::PollReply(message) => {
                if let Some(target) = message.reply_to.clone()
                    && turn.approvals().is_typed(&target)
                {
                    self.answer_question(turn, &target, &message).await;
                } else if let Some(reply) = poll_reply(turn.approvals(), &message) {
                    self.answer_typed(&reply, message, turn).await;
                }
            }
            ChannelInput::Report(reply) => {
                let _ = reply.send(self.report(Some(turn), false));
            }
            ChannelInput::Changed(change) => self.change_during_turn(change, turn).await,
            ChannelInput::Withdraw { target, by, reply } => {
                let _ = reply.send(self.withdraw(&target, &by).await);
            }
            ChannelInput::Command(command, message) => {
                self.command_during_turn(command, message, turn).await
            }
            ChannelInput::Reaction { by, target, key } => {
                self.reaction_during_turn(by, target, key, turn).await
            }
            ChannelInput::PollAnswer { by, target, answer } => {
                self.poll_answer_during_turn(by, target, answer, turn).await
            }
        }
    }

    /// A person's message while a turn runs: the typed answer to the question it replies
    /// to, the answer to the poll it replies to, or else a prompt that waits its turn.
    async fn prompt_during_turn(&mut self, message: IncomingMessage, turn: &mut RunningTurn) {
        // A reply to a question that wants a typed answer is the answer.
        if let Some(target) = message.reply_to.clone()
            && turn.approvals().is_typed(&target)
        {
            let event_id = message.event_id.clone();
            self.answer_question(turn, &target, &message).await;
            self.settle(&event_id).await;
            return;
        }
        // A bare number or emoji replying to a poll answers it.
        if let Some(reply) = poll_reply(turn.approvals(), &message) {
            let event_id = message.event_id.clone();
            self.answer_typed(&reply, message, turn).await;
            self.settle(&event_id).await;
            return;
        }
        self.written_during_turn(message, turn).await;
    }

    /// A command while a turn runs: what each does then is the registry's (stop the turn,
    /// answer its poll, or be answered beside it).
    async fn command_during_turn(
        &mut self,
        command: Command,
        message: IncomingMessage,
        turn: &mut RunningTurn,
    ) {
        let event_id = message.event_id.clone();
        let answers = super::commands::find(&command).and_then(|c| c.answers.clone());
        match (command.during_turn(), answers) {
            // `!stop task`: the background tasks, not the turn.
            (DuringTurn::StopsTheTurn, _) if let Some(number) = command.stopped_tasks() => {
                self.stop_tasks(number, &message.sender).await
            }
            (DuringTurn::StopsTheTurn, _) => self.stop_turn(message.sender, None, turn).await,
            (DuringTurn::AnswersThePoll, Some(reply)) => {
                self.answer_typed(&reply, message, turn).await
            }
            _ => self.answer_command(&command, &message.sender, true).await,
        }
        self.settle(&event_id).await;
    }

    /// A reaction while a turn runs: 🛑 on the answer, a poll or the note that the agent
    /// has gone quiet stops the turn, a choice's emoji on a poll answers it. Other
    /// reactions (someone who may not approve, an emoji of no choice) change nothing,
    /// silently.
    async fn reaction_during_turn(
        &mut self,
        by: UserId,
        target: EventId,
        key: String,
        turn: &mut RunningTurn,
    ) {
        if self.task_reaction(&by, &target, &key).await {
            return;
        }
        if poll::is_stop_key(&key)
            && (turn.stops_with(&target) || turn.approvals().is_stop_target(&target))
        {
            let from_poll = turn.approvals().is_poll(&target).then_some(&target);
            self.stop_turn(by, from_poll, turn).await;
        } else if turn.approvals().is_poll(&target) {
            let picked = (turn.approvals_mut())
                .pick(&self.ctx, &self.key.room, &target, &by, |c| {
                    poll::by_reaction(c, &key)
                })
                .await;
            if matches!(picked, Picked::AdminOnly { .. } | Picked::Answered(Some(_))) {
                self.after_pick(&picked, &by).await;
            }
            if picked == Picked::Stop {
                self.stop_turn(by, Some(&target), turn).await;
            }
        }
    }

    /// An answer to a native poll while a turn runs: it picks the choice of its ID, like
    /// the choice's reaction; Stop stops the turn. Unlike a reaction, an answer that
    /// counts for nothing (someone who may not approve, an admins-only choice) is said in
    /// the room: the client shows it as a vote.
    async fn poll_answer_during_turn(
        &mut self,
        by: UserId,
        target: EventId,
        answer: String,
        turn: &mut RunningTurn,
    ) {
        if !turn.approvals().is_poll(&target) {
            return;
        }
        let picked = (turn.approvals_mut())
            .pick(&self.ctx, &self.key.room, &target, &by, |c| {
                poll::by_answer(c, &answer)
            })
            .await;
        match picked {
            Picked::Stop => self.stop_turn(by, Some(&target), turn).await,
            Picked::NoPoll => {}
            picked => self.after_pick(&picked, &by).await,
        }
    }
}

/// The poll answer a message holds: a bare number or emoji replying to one of `approvals`'
/// open polls.
fn poll_reply(approvals: &Approvals, message: &IncomingMessage) -> Option<Reply> {
    (message.reply_to.as_ref())
        .filter(|t| approvals.is_poll(t))
        .and_then(|_| poll::parse_reply(&message.body))
}
