//! Budgets in a conversation: a prompt runs only while no limit of its room (or of its
//! sender there) is reached, unless its sender is an admin; a turn's spend is recorded
//! when it ends, and the room is told once a limit's warning share is crossed. See
//! `docs/budgets.md`.

use super::Channel;
use super::running_turn::Ended;
use crate::core::budget::refusing;
use crate::core::inbound::IncomingMessage;
use crate::model::OutMessage;
use crate::model::agent::{Cost, TokenUsage};
use crate::model::budget::{Amount, Standing, Unit};
use crate::model::ids::SessionId;
use crate::model::schedule;
use crate::render::strings;
use crate::store::{LogFailure, SpendRecord, now_ms};

/// What a turn reported of its spend.
pub(super) struct TurnSpend {
    /// The session it ran in (no session, no turn: nothing is recorded).
    pub session: Option<SessionId>,
    /// The session's cost as last reported during the turn.
    pub cost: Option<Cost>,
    /// The turn's tokens, when its result counted them.
    pub tokens: Option<u64>,
}

impl TurnSpend {
    /// What the ended turn reported (taken out of `ended`), with its result's `usage`.
    pub(super) fn of(ended: &mut Ended, usage: Option<TokenUsage>) -> Self {
        Self {
            session: ended.session.take(),
            cost: ended.cost.take(),
            tokens: usage.map(|u| u.total),
        }
    }
}

impl Channel {
    /// Whether `message` may run now. A limit reached refuses it, with a notice in reply
    /// saying whose limit, who set it and when it resets; an admin's prompt passes. When the
    /// spend cannot be read, it is refused too: a budget fails closed.
    pub(super) async fn within_budget(&self, message: &IncomingMessage) -> bool {
        let ctx = &self.ctx;
        let now = now_ms();
        let standings = (ctx.budgets)
            .standings(&ctx.store, &self.key.room, &message.sender, now)
            .await;
        let admin = ctx.admins.allows(&message.sender);
        let text = match &standings {
            Ok(standings) => match refusing(standings) {
                None => return true,
                Some(s) if admin => {
                    tracing::info!(agent = %ctx.agent_id, room = %self.key.room, sender = %message.sender, limit = %strings::limit_words(&s.limit), "an admin's prompt passes a reached budget");
                    return true;
                }
                Some(s) => {
                    let resets = self.resets_text(s, now).await;
                    strings::budget_reached(
                        s,
                        message.sender.as_str(),
                        &resets,
                        &ctx.command_prefix,
                    )
                }
            },
            Err(e) if admin => {
                tracing::warn!(agent = %ctx.agent_id, room = %self.key.room, error = %e, "could not read the spend; an admin's prompt passes");
                return true;
            }
            Err(e) => {
                tracing::error!(agent = %ctx.agent_id, room = %self.key.room, error = %e, "could not read the spend; the prompt is refused");
                strings::store_failed("the budget")
            }
        };
        tracing::info!(agent = %ctx.agent_id, room = %self.key.room, sender = %message.sender, event = %message.event_id, "a prompt refused: its budget is reached");
        crate::core::metrics::metrics().budget_refused(&ctx.agent_id);
        let notice = OutMessage::notice(text).replying_to(message.event_id.clone());
        self.voice()
            .say(
                &crate::core::voice::txn("budget", &[message.event_id.as_str()]),
                &notice,
            )
            .await;
        false
    }

    /// Records what the turn answering `prompt` spent, and tells the room of each limit it
    /// took past its warning share.
    pub(super) async fn count_spend(&self, prompt: &IncomingMessage, spent: TurnSpend) {
        let ctx = &self.ctx;
        let Some(session) = &spent.session else {
            return;
        };
        let cost = match &spent.cost {
            Some(cost) => Some(self.turn_cost(session, cost).await),
            None => None,
        };
        let record = SpendRecord {
            room: &self.key.room,
            sender: &prompt.sender,
            agent: &ctx.agent_id,
            session,
            prompt: &prompt.event_id,
            cost: cost.as_ref().map(|(turn, _)| turn.clone()),
            session_total: cost.as_ref().map_or(0, |(_, total)| *total),
            tokens: spent.tokens.unwrap_or(0),
        };
        (ctx.store.record_spend(&record).await).or_log("could not record what the turn spent");
        let metrics = crate::core::metrics::metrics();
        if let Some(cost) = &record.cost {
            metrics.spent(&ctx.agent_id, cost);
        }
        if record.tokens > 0 {
            metrics.spent(&ctx.agent_id, &Amount::tokens(record.tokens));
        }
        let now = now_ms();
        let standings = (ctx.budgets)
            .standings(&ctx.store, &self.key.room, &prompt.sender, now)
            .await
            .or_log("could not read the spend after a turn")
            .unwrap_or_default();
        for standing in standings {
            let this_turn = match (&standing.limit.amount.unit, &record.cost) {
                (Unit::Tokens, _) => record.tokens as i64,
                (unit, Some(cost)) if &cost.unit == unit => cost.value,
                _ => 0,
            };
            if standing.crossed(this_turn, ctx.budgets.warn_percent) {
                let resets = self.resets_text(&standing, now).await;
                let text = strings::budget_warning(
                    &standing,
                    prompt.sender.as_str(),
                    ctx.budgets.warn_percent,
                    &resets,
                );
                self.notice(text).await;
            }
        }
    }

    /// What this turn cost (what the session's reported cost grew by since its last turn
    /// counted), and the session's total. A total lower than the last one counted means the
    /// agent started counting again: all of it is this turn's.
    async fn turn_cost(&self, session: &SessionId, reported: &Cost) -> (Amount, i64) {
        let ctx = &self.ctx;
        let total = Amount::money(reported.amount, &reported.currency);
        let before = (ctx
            .store
            .session_total(&ctx.agent_id, session, &total.unit)
            .await)
            .or_log("could not read the session's last cost")
            .flatten()
            .unwrap_or(0);
        let grew = match total.value >= before {
            true => total.value - before,
            false => total.value,
        };
        let turn = Amount {
            value: grew,
            unit: total.unit.clone(),
        };
        (turn, total.value)
    }

    /// When `standing`'s period ends, in the room's time zone.
    async fn resets_text(&self, standing: &Standing, now: i64) -> String {
        let ctx = &self.ctx;
        let zone = (ctx.budgets.zone(&ctx.store, &self.key.room).await)
            .or_log("could not read the room's time zone")
            .unwrap_or_else(|| schedule::zone_or_utc(&ctx.budgets.time_zone));
        strings::resets(standing.resets_at, now, &zone)
    }
}
