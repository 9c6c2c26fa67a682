//! Webhooks: HTTP requests that prompt an agent (`docs/schedules.md`, "Webhooks"). A request
//! is checked (its signature, as its sender signs), its prompt filled from its JSON, and
//! stored as a run for the scheduler, which posts and admits it like a schedule's run.

pub mod signature;
pub mod template;
