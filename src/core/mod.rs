//! The protocol-neutral core: who may do what, which session a message goes to, and how a
//! turn runs. Nothing here imports matrix-sdk or the ACP SDK; the adapters in `crate::matrix`
//! and `crate::acp` implement the small traits in [`agent`] and [`chat`].

pub mod access;

pub mod agent;
pub mod approvals;
pub mod budget;
pub mod catch_up;
pub mod channel;
pub mod chat;
pub mod command;
pub mod context;
pub mod continuity;
pub mod crash_journal;
pub mod determination;
#[cfg(test)]
pub mod fakes;
pub mod framing;
pub mod gateway;
pub mod hearing;
pub mod inbound;
pub mod masking;
pub mod media;
pub mod metrics;
pub mod poll;
pub mod pool;
pub mod question;
pub mod queues;
pub mod reloadable;
pub mod room_tools;
pub mod routing;
pub mod session_settings;
pub mod settings_policy;
pub mod thread_chat;
pub mod view;
pub mod voice;
pub mod webhooks;
