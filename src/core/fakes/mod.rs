//! In-memory stand-ins for the chat and agent sides, for unit tests of the core.

use std::time::Duration;

use tokio::time::Instant;

mod agent;
mod chat;

pub use agent::{ASK_ASKS, FakeAgent, Script, ask_code_and_model, idle_session, usual_options};
pub use chat::{FakeChat, Sent};

/// Waits (real time: the store runs on its own thread) until `done` holds, for at most
/// `within`; the caller asserts what it expected.
pub async fn wait_for(within: Duration, done: impl Fn() -> bool) {
    let deadline = Instant::now() + within;
    while !done() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
