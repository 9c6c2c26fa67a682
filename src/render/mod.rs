//! Turning agent output into text people read: Markdown to HTML, tool cards, plans, polls
//! and usage lines, and every user-facing sentence. Pure functions over `crate::model`
//! types; sending and pacing live in `core::view`.

pub mod cards;
pub mod markdown;
pub mod strings;
