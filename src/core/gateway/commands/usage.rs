//! `!usage`: what agents spent in the room today and this month, per person and per agent,
//! and where each budget stands.

use std::sync::Arc;

use super::{Call, RoomCommand, Running};
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::core::gateway::Gateway;
use crate::core::inbound::IncomingMessage;
use crate::model::budget::Period;
use crate::model::schedule;
use crate::render::strings;
use crate::store::now_ms;

pub(crate) static COMMAND: RoomCommand = RoomCommand {
    spec: Spec {
        name: "usage",
        aliases: &["spend"],
        args: "",
        scope: Scope::Room,
        who: Who::Allowed,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Room,
        help: "what agents spent here today and this month, and the budgets",
        details: "Per person and per agent, as the agents reported it (cost, else tokens); \
                  then each budget that holds here, how much of it is spent and who set it. \
                  Days and months are the room's time zone's (`timezone`).",
    },
    run,
};

fn run<'a>(gateway: &'a Arc<Gateway>, call: Call<'a>) -> Running<'a> {
    Box::pin(async move {
        let text = gateway.usage_report(call.message).await;
        gateway.answer(call.message, text).await
    })
}

impl Gateway {
    /// `!usage`.
    pub(super) async fn usage_report(&self, message: &IncomingMessage) -> String {
        let room = &message.room_id;
        let Some(policy) = self.agents.values().next().map(|ctx| ctx.budgets.clone()) else {
            return strings::NO_BUDGET.to_owned();
        };
        let now = now_ms();
        let zone = schedule::zone_or_utc(&self.room_zone(room).await);
        let mut lines = Vec::new();
        for (title, period) in [("Today", Period::Day), ("This month", Period::Month)] {
            let (since, _) = period.bounds(now, &zone);
            let rows = match self.store.usage_since(room, since).await {
                Ok(rows) => rows,
                Err(e) => {
                    tracing::error!(error = %e, "could not read the spend");
                    return strings::store_failed("the spend");
                }
            };
            lines.push(format!("**{title}**"));
            if rows.is_empty() {
                lines.push(format!("- {}", strings::NOTHING_SPENT));
            }
            for row in rows {
                let agent = self.agent_name(&row.agent);
                let (cost, person) = (row.cost.as_ref(), row.sender.as_str());
                lines.push(strings::usage_line(
                    person, &agent, cost, row.tokens, row.turns,
                ));
            }
        }
        let standings = policy
            .standings(&self.store, room, &message.sender, now)
            .await;
        match standings {
            Ok(standings) if standings.is_empty() => lines.push(strings::NO_BUDGET.to_owned()),
            Ok(standings) => {
                lines.push("**Budgets**".to_owned());
                let you = message.sender.as_str();
                lines.extend(standings.iter().map(|s| strings::budget_line(s, you)));
            }
            Err(e) => tracing::error!(error = %e, "could not read the budgets"),
        }
        lines.join("\n")
    }

    /// An agent's display name, or its ID when it is not configured any more.
    fn agent_name(&self, agent: &crate::model::ids::AgentId) -> String {
        (self.agents.get(agent)).map_or_else(|| agent.to_string(), |c| c.display_name.clone())
    }
}
