//! The polls open in one channel (permission requests, and the agent's questions, which
//! are asked the same way): posting them, answering the agent when an approver picks a
//! choice (or types the answer to a question), expiring them, and closing them when the
//! turn ends.
//!
//! A poll never blocks anything: the request's answer channel is held here while the turn
//! goes on, and is answered whenever a reaction, a typed reply, the deadline or the end of
//! the turn comes first. See `docs/permissions.md`.

mod reactions;

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::context::AgentContext;
use super::poll;
use super::question;
use super::voice::{RoomVoice, fresh_txn, with_retry};
use crate::model::OutMessage;
use crate::model::agent::{PermissionAnswer, PermissionOption, PermissionRequest, ToolCallFields};
use crate::model::ids::{EventId, PermissionOptionId, RoomId, ToolCallId, UserId};
use crate::model::poll::{Choice, Decision};
use crate::model::question::{Question, QuestionAnswer, QuestionRequest, Value};
use crate::render::cards::{self, PollOutcome, PollView, QuestionView};
use crate::render::strings;
use crate::store::LogFailure;
use crate::store::StoredPoll;
use reactions::{OwnReactions, spawn_reactions};

/// What a poll asks, and where its answer goes.
enum Asks {
    /// Whether a tool may run.
    Permission {
        /// Where the agent's answer goes.
        reply: oneshot::Sender<PermissionAnswer>,
        /// The tool call, as described in the poll (boxed: it is most of the poll's size).
        tool: Box<ToolCallFields>,
    },
    /// A question of the agent's.
    Question {
        /// Where the answer goes.
        reply: oneshot::Sender<QuestionAnswer>,
        /// What it asks.
        question: Question,
    },
}

/// How a poll was settled, before it is put in the words of its kind.
enum Settled {
    /// This option was picked (or sent for want of an answer).
    Option(PermissionOptionId),
    /// Answered by typing (a question).
    Typed(Vec<(String, Value)>),
    /// Withdrawn: the turn stopped or ended.
    Cancelled,
}

/// One poll waiting for an answer.
struct OpenPoll {
    /// The poll message.
    event_id: EventId,
    /// How it was posted, so it is closed the same way.
    shape: Shape,
    /// What it asks and where the answer goes.
    asks: Asks,
    /// The options its choices stand for.
    options: Vec<PermissionOption>,
    /// The poll's lines.
    choices: Vec<Choice>,
    /// When it expires.
    deadline: Instant,
    /// When it was posted (ms since the epoch): a typed answer without a reply is taken
    /// only for a poll posted before the answer was written.
    posted_at_ms: u64,
    /// Its options that also switch the session's mode.
    switches: Vec<OptionSwitch>,
    /// The agent's own reactions on it (a choice's emoji each), withdrawn once it is
    /// settled: an answered poll shows only the answer.
    reactions: OwnReactions,
    /// Those told that their answers to it count for nothing: told once.
    told: std::collections::HashSet<UserId>,
}

/// How a poll was posted.
#[derive(Debug, Clone, Copy)]
struct Shape {
    /// A native poll (MSC3381): ended, not edited, once settled.
    native: bool,
    /// Its choices were pre-put as reactions, and are withdrawn once it is settled.
    reacts: bool,
}

/// A poll just posted, with what it offers.
struct PostedPoll {
    /// Its message.
    event_id: EventId,
    /// How it was posted.
    shape: Shape,
    /// The options its choices stand for.
    options: Vec<PermissionOption>,
    /// Its choices.
    choices: Vec<Choice>,
    /// Its options that also switch the session's mode.
    switches: Vec<OptionSwitch>,
}

/// A permission option that does more than answer: it switches the session's mode, or its
/// answer outlasts the session (a rule saved to the project's or the user's settings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionSwitch {
    /// The option's ID.
    pub option: PermissionOptionId,
    /// The mode it switches to, if it does.
    pub mode: Option<String>,
    /// Whether only an admin may choose it: the mode does not ask before acting, or the
    /// answer outlasts the session.
    pub needs_admin: bool,
}

/// Which open poll a typed answer without a reply is for.
#[derive(Debug, PartialEq, Eq)]
pub enum OnlyPoll<'a> {
    /// No poll is open.
    None,
    /// Polls are open, but all were posted after the answer was written.
    OnlyNewer,
    /// This one.
    One(&'a EventId),
    /// This many could be meant.
    Several(usize),
}

/// What picking a choice led to.
#[derive(Debug, PartialEq, Eq)]
pub enum Picked {
    /// The request was answered with an option; the mode it switched the session to, if
    /// it did.
    Answered(Option<String>),
    /// The choice also switches to a mode that does not ask, and the person is no admin:
    /// nothing changed (its label and the mode, for the room).
    AdminOnly {
        /// The choice's label.
        label: String,
        /// The mode it would switch to; `None`: its answer would outlast the session.
        mode: Option<String>,
    },
    /// The person chose Stop: the caller stops the turn.
    Stop,
    /// The person may not approve; nothing changed (said once per poll and person: again,
    /// [`Picked::Ignored`]).
    NotApprover,
    /// The person may not approve and was told so about this poll before: nothing to say.
    Ignored,
    /// The poll has no such choice.
    NoSuchChoice,
    /// No open poll of this channel matches.
    NoPoll,
}

/// A permission poll that was settled, for the card of the call it asked about: the poll
/// stood in for the card, whose message it now becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettledCall {
    /// The tool call it asked about.
    pub tool: ToolCallId,
    /// Its message, or `None` when it could not be posted.
    pub message: Option<EventId>,
    /// How it ended, in a line (from [`cards::poll_outcome`]).
    pub decision: String,
    /// What the agent was sent: an option that refuses (`Some(true)`), one that allows
    /// (`Some(false)`), or none (the turn stopped or ended first). The card's status
    /// follows from it.
    pub refused: Option<bool>,
}

/// The open polls and questions of one running turn, and its refusals (a turn starts
/// with none: `Default`).
#[derive(Default)]
pub struct Approvals {
    /// Open polls, oldest first.
    polls: Vec<OpenPoll>,
    /// Permission polls settled since the turn's view last took them.
    settled: Vec<SettledCall>,
    /// Calls refused in the running turn.
    refusals: u32,
    /// The notice that proposed stopping the turn, once posted.
    stop_proposal: Option<EventId>,
}

impl Approvals {
    /// The permission polls settled since the last call, for the turn's cards.
    pub fn take_settled(&mut self) -> Vec<SettledCall> {
        std::mem::take(&mut self.settled)
    }

    /// Whether `event_id` is one of the open polls.
    pub fn is_poll(&self, event_id: &EventId) -> bool {
        self.polls.iter().any(|p| &p.event_id == event_id)
    }

    /// Whether a 🛑 on `event_id` stops the turn: open polls and the stop proposal.
    pub fn is_stop_target(&self, event_id: &EventId) -> bool {
        self.is_poll(event_id) || self.stop_proposal.as_ref() == Some(event_id)
    }

    /// The poll a typed answer without a reply, written at `written_at_ms`, is for: the
    /// only open poll posted before it. A poll posted after the answer was written is one
    /// its author had not seen (the one they meant may have expired meanwhile), so it never
    /// counts.
    pub fn only_poll_before(&self, written_at_ms: u64) -> OnlyPoll<'_> {
        let seen: Vec<&OpenPoll> = self
            .polls
            .iter()
            .filter(|p| p.posted_at_ms <= written_at_ms)
            .collect();
        match seen.as_slice() {
            [] if self.polls.is_empty() => OnlyPoll::None,
            [] => OnlyPoll::OnlyNewer,
            [one] => OnlyPoll::One(&one.event_id),
            many => OnlyPoll::Several(many.len()),
        }
    }

    /// Whether `event_id` is an open question answered by typing.
    pub fn is_typed(&self, event_id: &EventId) -> bool {
        self.polls.iter().any(|p| {
            &p.event_id == event_id
                && matches!(&p.asks, Asks::Question { question, .. } if question::typed(question))
        })
    }

    /// How many polls are open.
    pub fn open_count(&self) -> usize {
        self.polls.len()
    }

    /// When the next poll expires.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.polls.iter().map(|p| p.deadline).min()
    }

    /// Posts a poll for `request`, described with `tool` (what the agent announced about
    /// the call, merged with what the request says), and pre-reacts with every choice.
    /// `switches` are its options that also switch the session's mode; those only admins
    /// may choose say so. `prompter`, who started the turn, is notified if they may
    /// approve. If the poll cannot be posted, the request is refused at once: nobody could
    /// answer it.
    pub async fn open(
        &mut self,
        ctx: &AgentContext,
        room: &RoomId,
        request: PermissionRequest,
        tool: ToolCallFields,
        prompter: &UserId,
        switches: Vec<OptionSwitch>,
    ) {
        let choices = labelled_choices(&request.options, &switches);
        let style = ctx.permissions.get().poll;
        // A native poll holds at most so many answers; more choices are asked the usual way.
        let shape = Shape {
            native: style.is_native() && choices.len() <= poll::MAX_NATIVE_ANSWERS,
            reacts: style.reacts() || choices.len() > poll::MAX_NATIVE_ANSWERS,
        };
        let view = PollView {
            agent: &ctx.display_name,
            tool: &tool,
            choices: &choices,
            typed: &poll::typed_answers(&choices),
            prefix: &ctx.command_prefix,
            timeout: ctx.permissions.get().timeout,
        };
        let mut content = match shape.native {
            true => cards::native_poll(&view, shape.reacts),
            false => cards::poll(&view),
        };
        if ctx.approvers.allows(prompter) {
            content.mentions.push(prompter.clone());
        }
        let txn = fresh_txn(&format!("poll-{}", tool.id));
        let answers = shape.native.then(|| poll::native_answers(&choices));
        // The same transaction ID on every try: a retried post is never duplicated.
        let sent = with_retry(|| async {
            match &answers {
                Some(answers) => ctx.chat.send_poll(room, &txn, &content, answers).await,
                None => ctx.chat.send(room, &txn, &content).await,
            }
        })
        .await;
        let event_id = match sent {
            Ok(id) => id,
            Err(e) => {
                tracing::error!(agent = %ctx.agent_id, room = %room, error = %e, "could not post a permission poll; refusing the request");
                let option = poll::expiry_option(&request.options);
                let answer = option.map_or(PermissionAnswer::Cancelled, |o| {
                    PermissionAnswer::Selected(o.id.clone())
                });
                let _ = request.reply.send(answer);
                self.settled.push(SettledCall {
                    tool: tool.id.clone(),
                    message: None,
                    decision: cards::poll_outcome(&PollOutcome::Expired {
                        label: option.map(|o| o.name.clone()),
                    }),
                    refused: option.map(|o| o.kind.refuses()),
                });
                return;
            }
        };
        tracing::info!(agent = %ctx.agent_id, room = %room, poll = %event_id, tool = %tool.id, native = shape.native, "permission poll posted");
        let asks = Asks::Permission {
            reply: request.reply,
            tool: Box::new(tool),
        };
        let posted = PostedPoll {
            event_id,
            shape,
            options: request.options,
            choices,
            switches,
        };
        self.posted(ctx, room, asks, posted).await;
    }

    /// Asks the agent's question with a poll: its choices to pick from, or a typed reply.
    /// If it cannot be posted, the question is declined at once: nobody could answer it.
    pub async fn ask(
        &mut self,
        ctx: &AgentContext,
        room: &RoomId,
        request: QuestionRequest,
        prompter: &UserId,
    ) {
        let question = request.question;
        let choices = question::choices(&question, strings::POLL_STOP_LABEL);
        let hint = question::typed(&question).then(|| question::hint(&question));
        let view = QuestionView {
            agent: &ctx.display_name,
            question: &question,
            choices: &choices,
            typed: hint.as_deref(),
            timeout: ctx.permissions.get().timeout,
        };
        let mut content = cards::question(&view);
        if ctx.approvers.allows(prompter) {
            content.mentions.push(prompter.clone());
        }
        let txn = fresh_txn("question");
        let event_id = match with_retry(|| ctx.chat.send(room, &txn, &content)).await {
            Ok(id) => id,
            Err(e) => {
                tracing::error!(agent = %ctx.agent_id, room = %room, error = %e, "could not post the agent's question; declining it");
                let _ = request.reply.send(QuestionAnswer::Declined);
                return;
            }
        };
        tracing::info!(agent = %ctx.agent_id, room = %room, poll = %event_id, "question posted");
        let options = choices
            .iter()
            .filter_map(|c| match &c.decision {
                Decision::Select(o) => Some(o.clone()),
                Decision::Stop => None,
            })
            .collect();
        let asks = Asks::Question {
            reply: request.reply,
            question,
        };
        let posted = PostedPoll {
            event_id,
            shape: Shape {
                native: false,
                reacts: true,
            },
            options,
            choices,
            switches: Vec::new(),
        };
        self.posted(ctx, room, asks, posted).await;
    }

    /// Keeps a posted poll open (in memory, and in the store so a restart can close it)
    /// and pre-reacts with its choices where it is answered by reactions.
    async fn posted(&mut self, ctx: &AgentContext, room: &RoomId, asks: Asks, posted: PostedPoll) {
        let PostedPoll {
            event_id,
            shape,
            options,
            choices,
            switches,
        } = posted;
        let expired = asks.closing(shape, &ctx.display_name, &PollOutcome::Restarted);
        let stored = StoredPoll {
            event_id: event_id.clone(),
            room_id: room.clone(),
            body: expired.body,
            html: expired.html,
            native: shape.native,
        };
        ctx.store
            .save_poll(&ctx.agent_id, &stored)
            .await
            .or_log("could not record the poll; a restart will leave it open");
        // Pre-reacting takes one request per choice and may wait on rate limits: it runs
        // beside the turn, which meanwhile keeps taking updates and answers.
        let reactions = match shape.reacts {
            true => {
                let keys: Vec<String> = choices.iter().map(|c| c.emoji.clone()).collect();
                spawn_reactions(ctx, room, event_id.clone(), keys)
            }
            false => OwnReactions::default(),
        };
        self.polls.push(OpenPoll {
            event_id,
            shape,
            asks,
            options,
            choices,
            deadline: Instant::now() + ctx.permissions.get().timeout,
            posted_at_ms: crate::store::now_ms().max(0) as u64,
            switches,
            reactions,
            told: Default::default(),
        });
    }

    /// `by` typed `text` in reply to question `event_id`: answered when they may approve
    /// and it reads as the answer the question wants.
    pub async fn answer_text(
        &mut self,
        ctx: &AgentContext,
        room: &RoomId,
        event_id: &EventId,
        by: &UserId,
        text: &str,
    ) -> Typed {
        let Some(i) = self.polls.iter().position(|p| &p.event_id == event_id) else {
            return Typed::NoPoll;
        };
        let Asks::Question { question, .. } = &self.polls[i].asks else {
            return Typed::NoPoll;
        };
        if !may_approve(ctx, room, event_id, by).await {
            return Typed::NotApprover;
        }
        let fields = match question::parse(question, text) {
            Ok(fields) => fields,
            Err(why) => return Typed::Unreadable(why),
        };
        let poll = self.polls.remove(i);
        tracing::info!(agent = %ctx.agent_id, room = %room, poll = %event_id, by = %by, "question answered");
        let outcome = PollOutcome::Answered {
            by: ctx.name_in(room, by).await,
            text: shown_answer(text),
        };
        settle(ctx, room, poll, Settled::Typed(fields), &outcome).await;
        Typed::Answered
    }

    /// `by` picked a choice on poll `event_id` (`pick` finds it among the poll's choices).
    pub async fn pick(
        &mut self,
        ctx: &AgentContext,
        room: &RoomId,
        event_id: &EventId,
        by: &UserId,
        pick: impl FnOnce(&[Choice]) -> Option<&Choice>,
    ) -> Picked {
        let Some(i) = self.polls.iter().position(|p| &p.event_id == event_id) else {
            return Picked::NoPoll;
        };
        if !may_approve(ctx, room, event_id, by).await {
            return match self.polls[i].told.insert(by.clone()) {
                true => Picked::NotApprover,
                false => Picked::Ignored,
            };
        }
        let Some(choice) = pick(&self.polls[i].choices).cloned() else {
            return Picked::NoSuchChoice;
        };
        match choice.decision {
            Decision::Stop => Picked::Stop,
            Decision::Select(option) => {
                let switch = self.polls[i]
                    .switches
                    .iter()
                    .find(|s| s.option == option.id)
                    .cloned();
                if let Some(switch) = &switch
                    && switch.needs_admin
                    && !ctx.admins.allows(by)
                {
                    tracing::info!(agent = %ctx.agent_id, room = %room, poll = %event_id, by = %by, option = %option.id, mode = ?switch.mode, "refusing a poll choice only admins may choose");
                    return Picked::AdminOnly {
                        label: option.name,
                        mode: switch.mode.clone(),
                    };
                }
                let poll = self.polls.remove(i);
                let refusal = option.kind.refuses();
                let counts = refusal && matches!(poll.asks, Asks::Permission { .. });
                tracing::info!(agent = %ctx.agent_id, room = %room, poll = %event_id, by = %by, option = %option.id, "poll answered");
                let outcome = PollOutcome::Chosen {
                    by: ctx.name_in(room, by).await,
                    emoji: choice.emoji,
                    label: option.name,
                    refusal,
                };
                let call = settle(ctx, room, poll, Settled::Option(option.id), &outcome).await;
                self.settled.extend(call);
                if counts {
                    self.refused(ctx, room).await;
                }
                Picked::Answered(switch.and_then(|s| s.mode))
            }
        }
    }

    /// How many tool calls its polls refused so far (a refusal, or nobody answering in
    /// time).
    pub fn refusals(&self) -> u32 {
        self.refusals
    }

    /// Refuses every poll whose deadline has passed.
    pub async fn expire_due(&mut self, ctx: &AgentContext, room: &RoomId) {
        let now = Instant::now();
        while let Some(i) = self.polls.iter().position(|p| p.deadline <= now) {
            let poll = self.polls.remove(i);
            let option = poll::expiry_option(&poll.options).cloned();
            tracing::info!(agent = %ctx.agent_id, room = %room, poll = %poll.event_id, "permission poll expired");
            let outcome = PollOutcome::Expired {
                label: option.as_ref().map(|o| o.name.clone()),
            };
            // Without any refusal offered, withdrawing the request is the only answer left.
            let answer = option.map_or(Settled::Cancelled, |o| Settled::Option(o.id));
            let counts = matches!(poll.asks, Asks::Permission { .. });
            let call = settle(ctx, room, poll, answer, &outcome).await;
            self.settled.extend(call);
            if counts {
                self.refused(ctx, room).await;
            }
        }
    }

    /// Answers every open poll `cancelled` (the turn stopped or ended); `outcome` says how
    /// each poll, by its event ID, is marked.
    pub async fn cancel_all(
        &mut self,
        ctx: &AgentContext,
        room: &RoomId,
        outcome: impl Fn(&EventId) -> PollOutcome,
    ) {
        for poll in std::mem::take(&mut self.polls) {
            let o = outcome(&poll.event_id);
            let call = settle(ctx, room, poll, Settled::Cancelled, &o).await;
            self.settled.extend(call);
        }
    }

    /// Counts a refused call; at the configured count, proposes stopping the turn.
    async fn refused(&mut self, ctx: &AgentContext, room: &RoomId) {
        self.refusals += 1;
        tracing::debug!(refusals = self.refusals, "a tool call was refused");
        if self.refusals < ctx.permissions.get().propose_stop_after || self.stop_proposal.is_some()
        {
            return;
        }
        let text = strings::propose_stop(&ctx.display_name, self.refusals, &ctx.command_prefix);
        let txn = fresh_txn("propose-stop");
        match ctx.chat.send(room, &txn, &OutMessage::notice(text)).await {
            Ok(id) => {
                tracing::info!(agent = %ctx.agent_id, room = %room, refusals = self.refusals, "proposed stopping the turn");
                spawn_reactions(ctx, room, id.clone(), vec![poll::STOP_EMOJI.to_owned()]);
                self.stop_proposal = Some(id);
            }
            Err(e) => {
                tracing::warn!(room = %room, error = %e, "could not propose stopping the turn")
            }
        }
    }
}

/// What typing an answer to a question led to.
#[derive(Debug, PartialEq, Eq)]
pub enum Typed {
    /// The question was answered.
    Answered,
    /// The person may not answer; nothing changed.
    NotApprover,
    /// It does not read as the answer wanted (why, for the person); the question stays open.
    Unreadable(String),
    /// No open question of this channel matches.
    NoPoll,
}

/// Whether `by` may answer poll `event_id` (an approver, with the power level the config
/// asks for, if it does).
async fn may_approve(ctx: &AgentContext, room: &RoomId, event_id: &EventId, by: &UserId) -> bool {
    if !ctx.approvers.allows(by) {
        tracing::info!(agent = %ctx.agent_id, room = %room, poll = %event_id, by = %by, "ignoring a poll answer from someone who may not approve");
        return false;
    }
    if let Some(min) = ctx.approver_min_power {
        // Unknown power counts as too little: an answer is never taken on doubt.
        let power = ctx.chat.power_level(room, by).await;
        if !power.as_ref().is_ok_and(|p| *p >= min) {
            tracing::info!(agent = %ctx.agent_id, room = %room, poll = %event_id, by = %by, power = %power.as_ref().map_or_else(|e| format!("unknown ({e})"), |p| p.to_string()), min, "ignoring a poll answer from an approver without the power level the config asks for");
            return false;
        }
    }
    true
}

/// A typed answer as its question's message shows it: one line, within bounds.
fn shown_answer(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

impl Asks {
    /// What closes the poll, posted as `shape`, once settled with `outcome`: the message it
    /// is edited to, or the native poll's end.
    fn closing(&self, shape: Shape, agent: &str, outcome: &PollOutcome) -> OutMessage {
        match self {
            _ if shape.native => cards::poll_ended(outcome),
            Asks::Permission { tool, .. } => cards::poll_settled(agent, tool, outcome),
            Asks::Question { question, .. } => cards::question_settled(agent, question, outcome),
        }
    }
}

/// The poll's choices for the agent's `options`, those that switch to a mode only admins
/// may choose saying so.
fn labelled_choices(options: &[PermissionOption], switches: &[OptionSwitch]) -> Vec<Choice> {
    let mut choices = poll::choices(options, strings::POLL_STOP_LABEL);
    for choice in &mut choices {
        if let Decision::Select(option) = &choice.decision
            && let Some(switch) = (switches.iter()).find(|s| s.needs_admin && s.option == option.id)
        {
            let why = match switch.mode {
                Some(_) => strings::ADMINS_ONLY_CHOICE,
                None => strings::ADMINS_ONLY_LASTING,
            };
            choice.label = format!("{} ({why})", choice.label);
        }
    }
    choices
}

/// Answers the agent, edits the poll to say how it ended, and forgets it in the store.
/// A permission poll is returned as settled, for the card of its call.
async fn settle(
    ctx: &AgentContext,
    room: &RoomId,
    poll: OpenPoll,
    settled: Settled,
    outcome: &PollOutcome,
) -> Option<SettledCall> {
    let content = poll.asks.closing(poll.shape, &ctx.display_name, outcome);
    let refused = match &settled {
        Settled::Option(id) => (poll.options.iter())
            .find(|o| &o.id == id)
            .map(|o| o.kind.refuses()),
        Settled::Typed(_) | Settled::Cancelled => None,
    };
    let call = match &poll.asks {
        Asks::Permission { tool, .. } => Some(SettledCall {
            tool: tool.id.clone(),
            // A native poll cannot become the call's card: the card is posted after it.
            message: (!poll.shape.native).then(|| poll.event_id.clone()),
            decision: cards::poll_outcome(outcome),
            refused,
        }),
        Asks::Question { .. } => None,
    };
    let counted = match outcome {
        PollOutcome::Chosen { refusal: false, .. } => "allowed",
        PollOutcome::Chosen { refusal: true, .. } => "refused",
        PollOutcome::Answered { .. } => "answered",
        PollOutcome::Stopped { .. } | PollOutcome::TurnStopped => "stopped",
        PollOutcome::Expired { .. } => "expired",
        PollOutcome::TurnEnded => "turn_ended",
        PollOutcome::Restarted => "restarted",
    };
    crate::core::metrics::metrics().poll_ended(&ctx.agent_id, counted);
    let delivered = match poll.asks {
        Asks::Permission { reply, .. } => reply
            .send(match settled {
                Settled::Option(id) => PermissionAnswer::Selected(id),
                Settled::Typed(_) | Settled::Cancelled => PermissionAnswer::Cancelled,
            })
            .is_ok(),
        Asks::Question { reply, question } => reply
            .send(match settled {
                Settled::Option(id) => question::answer_for(&question, &id),
                Settled::Typed(fields) => QuestionAnswer::Accepted(fields),
                Settled::Cancelled => QuestionAnswer::Cancelled,
            })
            .is_ok(),
    };
    if !delivered {
        tracing::debug!(poll = %poll.event_id, "the agent no longer waits for this answer");
    }
    match poll.shape.native {
        true => end_poll(ctx, room, &poll.event_id, &content).await,
        false => {
            RoomVoice::new(&*ctx.chat, &ctx.agent_id, room)
                .edit(&poll.event_id, &content)
                .await
        }
    }
    poll.reactions.withdraw(ctx, room);
    ctx.store
        .forget_poll(&poll.event_id)
        .await
        .or_log("could not forget a settled poll");
    call
}

/// Ends native poll `poll` saying `content`; a failure is only logged (the answer
/// reached the agent already).
pub async fn end_poll(ctx: &AgentContext, room: &RoomId, poll: &EventId, content: &OutMessage) {
    if let Err(e) = with_retry(|| ctx.chat.end_poll(room, poll, content)).await {
        tracing::warn!(agent = %ctx.agent_id, room = %room, poll = %poll, error = %e, "could not end a native poll");
    }
}
