//! The Matrix side: the only module that imports matrix-sdk. Each agent is its own Matrix
//! user with its own client, device and store; this module logs it in, runs its sync loop,
//! turns room events into core [`Inbound`](crate::core::inbound::Inbound)s and implements
//! [`ChatPort`](crate::core::chat::ChatPort) for it.

mod client;
mod errors;
mod history;
mod ids;
mod inbound;
mod late_decryption;
mod late_keys;
mod media;
mod mentions;
mod outbound;
mod polls;
mod recovery;
mod sender_proof;
mod sync;
mod timeline;

pub use client::{MatrixAgent, MatrixError, MatrixSecurity, check_token};
