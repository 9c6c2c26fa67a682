//! Turning agent output into what people see: Markdown to HTML, streamed replies as
//! coalesced edits, tool cards, plans and polls, and every user-facing sentence.

pub mod cards;
pub mod live;
pub mod markdown;
pub mod stream;
pub mod strings;
