//! `!budget [room|person day|month AMOUNT|off]`: the limits of what agents may spend here;
//! admins set the room's own over the configured ones.

use std::sync::Arc;

use super::{Call, RoomCommand, Running};
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::gateway::Gateway;
use crate::core::inbound::IncomingMessage;
use crate::model::budget::{self, Amount, Limit, Period};
use crate::render::strings;

pub(crate) static COMMAND: RoomCommand = RoomCommand {
    spec: Spec {
        name: "budget",
        aliases: &[],
        args: "[room|person day|month AMOUNT|off]",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Room,
        help: "the limits of what agents may spend here (admins set them)",
        details: "Without words, the limits that hold here (as `usage` shows them). \
                  `budget room day 5 USD` limits what the room spends together in a day; \
                  `budget person month 2M tokens` what each person spends in a month; \
                  `off` goes back to the configured limits. Admins only; an admin's prompts \
                  pass a reached limit.",
    },
    run,
};

fn run<'a>(gateway: &'a Arc<Gateway>, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        let text = gateway.budget_command(call.command, call.message).await;
        gateway.answer(call.message, text).await
    })
}

impl Gateway {
    /// `!budget …`.
    async fn budget_command(
        &self,
        command: &crate::core::command::Command,
        message: &IncomingMessage,
    ) -> String {
        let words: Vec<&str> = command.words().iter().map(String::as_str).collect();
        if words.is_empty() {
            return self.usage_report(message).await;
        }
        if !self.people.is_admin(&message.sender) {
            return strings::BUDGET_FOR_ADMINS.to_owned();
        }
        let (scope, period) = match (words.first(), words.get(1)) {
            (Some(s), Some(p)) => match (
                budget::Scope::parse(&s.to_lowercase()),
                Period::parse(&p.to_lowercase()),
            ) {
                (Some(s), Some(p)) => (s, p),
                _ => return strings::budget_usage(&self.prefix),
            },
            _ => return strings::budget_usage(&self.prefix),
        };
        let room = &message.room_id;
        let rest = words[2..].join(" ");
        if rest.eq_ignore_ascii_case("off") {
            return match self.store.clear_budget_limits(room, scope, period).await {
                Ok(n) => strings::budget_cleared(scope, period, n),
                Err(e) => {
                    tracing::error!(error = %e, "could not clear the room's budget");
                    strings::SETTING_NOT_SAVED.to_owned()
                }
            };
        }
        let amount = match Amount::parse(&rest) {
            Ok(amount) => amount,
            Err(e) => return format!("⚠️ {e}. {}", strings::budget_usage(&self.prefix)),
        };
        let saved = (self.store)
            .set_budget_limit(room, scope, period, &amount, &message.sender)
            .await;
        let limit = Limit {
            scope,
            period,
            amount,
            set_by: Some(message.sender.to_string()),
        };
        tracing::info!(room = %room, by = %message.sender, limit = %strings::limit_words(&limit), "a budget set");
        super::saved(saved, "the room's budget", strings::budget_set(&limit))
    }
}
