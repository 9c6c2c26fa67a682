//! Turning agent output into what people see: Markdown to HTML, streamed replies as
//! coalesced edits, and every user-facing sentence.

pub mod markdown;
pub mod stream;
pub mod strings;
