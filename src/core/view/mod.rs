//! The turn's view: what a running turn shows in the room, sent and edited at a pace the
//! homeserver accepts. The reply streams as coalesced edits ([`stream`]), the agent's work
//! as cards, plan and thinking ([`activity`]), both on the paced sender of [`live`]. The
//! words and HTML come from `crate::render`. See `docs/streaming.md`.

pub mod activity;
pub mod live;
pub mod stream;
