//! `!login [ID]` (admins only): signs the agent in with a method it offers.

use super::{AgentCommand, Call, Running};
use crate::core::channel::Channel;
use crate::core::command::registry::{AfterCrash, Applies, DuringTurn, Group, Scope, Spec, Who};
use crate::model::ids::UserId;
use crate::render::strings;

pub(crate) static COMMAND: AgentCommand = AgentCommand {
    spec: Spec {
        name: "login",
        aliases: &[],
        args: "[ID]",
        scope: Scope::Agent,
        who: Who::Admins,
        during_turn: DuringTurn::AtOnce,
        after_crash: AfterCrash::Reported,
        applies: Applies::Always,
        group: Group::Session,
        help: "sign the agent in",
        details: "Signs the agent in with one of the methods it offers; without an ID, lists \
                      them. Admins only.",
    },
    run,
    answers: None,
};

fn run<'a>(channel: &'a mut Channel, call: Call<'a>) -> Running<'a> {
    Box::pin(channel.login_command(call.command.arg(0), call.by))
}

impl Channel {
    /// `!login ID` (admins only): signs the agent in with a method it offers.
    async fn login_command(&mut self, method: Option<&str>, by: &UserId) {
        let ctx = self.ctx.clone();
        if !ctx.admins.allows(by) {
            self.notice(strings::login_admins_only(&ctx.command_prefix))
                .await;
            return;
        }
        let _lease = self.lease().await;
        if let Err(e) = self.folder_with_agent().await {
            self.notice(strings::session_failed(&ctx.display_name, &e.to_string()))
                .await;
            return;
        }
        let methods = ctx.agent.auth_methods();
        let Some(method) = method.filter(|m| methods.iter().any(|known| known.id == *m)) else {
            self.notice(strings::login_usage(
                &ctx.display_name,
                &methods,
                &ctx.command_prefix,
            ))
            .await;
            return;
        };
        match ctx.agent.authenticate(method).await {
            Ok(()) => {
                tracing::info!(agent = %ctx.agent_id, method, by = %by, "the agent was signed in");
                self.notice(strings::signed_in(&ctx.display_name, method))
                    .await
            }
            Err(e) => {
                tracing::warn!(agent = %ctx.agent_id, method, error = %e, "signing in failed");
                self.notice(strings::sign_in_failed(
                    &ctx.display_name,
                    method,
                    &e.to_string(),
                ))
                .await
            }
        }
    }
}
