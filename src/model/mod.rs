//! The data every part of Sidekicks shares: what an agent reports, what is posted, how much a
//! room shows, secrets, IDs. It imports nothing else of ours, so every other module may
//! import it without a cycle.

pub mod agent;
pub mod budget;
pub mod commands;
pub mod durations;
pub mod errors;
pub mod ids;
pub mod media;
pub mod message;
pub mod modes;
pub mod poll;
pub mod question;
pub mod queue_mode;
pub mod random;
pub mod schedule;
pub mod secret;
pub mod thread_mode;
pub mod variable;
pub mod verbosity;

pub use message::OutMessage;
pub use queue_mode::QueueMode;
pub use secret::Secret;
pub use thread_mode::ThreadMode;
pub use verbosity::Verbosity;
