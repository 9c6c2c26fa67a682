//! Permission polls, the pure part: which emoji stands for which of the agent's options,
//! how a reaction or a typed reply picks one, and what answers a poll nobody answered.
//! The flow around it (posting, waiting, editing) lives in `core::approvals`; the wording
//! in `render::cards`. See `docs/permissions.md`.

use std::time::Duration;

use crate::model::agent::{PermissionKind, PermissionOption};

use crate::model::poll::{Choice, Decision, PollAnswer};

/// How polls behave: the `[permissions]` table of the config, read straight into this
/// struct (its keys and defaults are declared here and nowhere else).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PermissionSettings {
    /// How long a poll waits for an answer before the request is refused (the agent's
    /// "reject" option) (`timeout_secs`).
    #[serde(rename = "timeout_secs", with = "crate::model::durations::secs")]
    pub timeout: Duration,
    /// Refused calls in one turn after which the gateway proposes to stop it.
    pub propose_stop_after: u32,
    /// How a permission poll is posted: a message answered by reactions, a native poll
    /// (MSC3381) clients show with buttons, or a native poll that reactions answer too.
    pub poll: PollStyle,
}

/// How a permission poll is posted (`[permissions] poll`). Typed answers (`!allow`, a
/// number) work with each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PollStyle {
    /// A message listing the choices, each pre-put as a reaction: works in every client.
    #[default]
    Reactions,
    /// A native poll (`org.matrix.msc3381.poll.start`) with one answer per choice, for
    /// clients that show polls with buttons (Element, nheko…); ended with the outcome.
    Native,
    /// A native poll that also carries the choices' reactions, for rooms where some
    /// clients show polls and some do not.
    Both,
}

impl PollStyle {
    /// Whether the poll is a native poll event.
    pub fn is_native(self) -> bool {
        self != PollStyle::Reactions
    }

    /// Whether the choices are pre-put as reactions on the poll.
    pub fn reacts(self) -> bool {
        self != PollStyle::Native
    }
}

impl PermissionSettings {
    /// What is wrong with these settings, as (key in `[permissions]`, why).
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if self.timeout < Duration::from_secs(5) {
            out.push((
                "timeout_secs",
                "must be at least 5 (people need time to answer)".into(),
            ));
        }
        if self.propose_stop_after == 0 {
            out.push(("propose_stop_after", "must be at least 1".into()));
        }
        out
    }
}

impl Default for PermissionSettings {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(600),
            propose_stop_after: 3,
            poll: PollStyle::default(),
        }
    }
}

/// The emoji of the Stop choice: the same that stops a turn from its reply.
pub const STOP_EMOJI: &str = crate::render::strings::STOP_REACTION;

/// Keycap emoji for options that share a kind with an earlier one.
const KEYCAPS: [&str; 9] = ["1️⃣", "2️⃣", "3️⃣", "4️⃣", "5️⃣", "6️⃣", "7️⃣", "8️⃣", "9️⃣"];

/// The poll's choices for the agent's options, in the agent's order, then Stop.
///
/// Each kind has its emoji: ✅ allow once, 🔁 allow always, ❌ the main refusal, ✋ the
/// secondary one. The main refusal is "reject always" when the agent offers it ("never in
/// this session"): a small model refused only once retries the same call with variations
/// in a loop. "Reject once" is then the secondary ✋; without a "reject always" it takes ❌.
/// An option of a kind already shown gets a keycap of its number.
pub fn choices(options: &[PermissionOption], stop_label: &str) -> Vec<Choice> {
    let has_reject_always = options
        .iter()
        .any(|o| o.kind == PermissionKind::RejectAlways);
    let mut used: Vec<&str> = Vec::new();
    let mut out: Vec<Choice> = options
        .iter()
        .enumerate()
        .map(|(i, option)| {
            let preferred = match option.kind {
                PermissionKind::AllowOnce => "✅",
                PermissionKind::AllowAlways => "🔁",
                PermissionKind::RejectAlways => "❌",
                PermissionKind::RejectOnce if has_reject_always => "✋",
                PermissionKind::RejectOnce => "❌",
            };
            // Past nine options a duplicate has no keycap left; its number still works.
            let emoji = if used.contains(&preferred) {
                KEYCAPS.get(i).copied().unwrap_or("🔢")
            } else {
                preferred
            };
            used.push(emoji);
            Choice {
                number: i + 1,
                emoji: emoji.to_owned(),
                label: option.name.clone(),
                decision: Decision::Select(option.clone()),
            }
        })
        .collect();
    out.push(Choice {
        number: out.len() + 1,
        emoji: STOP_EMOJI.to_owned(),
        label: stop_label.to_owned(),
        decision: Decision::Stop,
    });
    out
}

/// A typed answer to a poll, for clients that cannot react.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `!allow`: allow this call.
    Allow,
    /// `!always`: allow this tool for the session.
    Always,
    /// `!deny`: the main refusal (❌).
    Deny,
    /// `!reject`: refuse this call only (✋), or the main refusal if there is no such option.
    Reject,
    /// A bare number: the choice with that number.
    Number(usize),
    /// A bare emoji: the choice with that emoji.
    Emoji(String),
}

/// Reads a reply to a poll: a bare number or emoji. The `!allow`-style commands are parsed
/// with the other chat commands (`core::command`).
pub fn parse_reply(body: &str) -> Option<Reply> {
    let text = body.trim();
    if let Ok(n) = text.parse::<usize>() {
        return Some(Reply::Number(n));
    }
    let key = normalise(text);
    let is_emoji = !key.is_empty() && key.chars().count() <= 3 && !key.is_ascii();
    is_emoji.then_some(Reply::Emoji(key))
}

/// The choice a reply names, if the poll has it.
pub fn pick<'a>(choices: &'a [Choice], reply: &Reply) -> Option<&'a Choice> {
    let by_emoji = |e: &str| choices.iter().find(|c| c.emoji == e);
    match reply {
        Reply::Allow => by_emoji("✅"),
        Reply::Always => by_emoji("🔁"),
        Reply::Deny => by_emoji("❌"),
        Reply::Reject => by_emoji("✋").or_else(|| by_emoji("❌")),
        Reply::Number(n) => choices.iter().find(|c| c.number == *n),
        Reply::Emoji(key) => by_reaction(choices, key),
    }
}

/// The typed answers (`allow`, `always`, `deny`, `reject`) that pick a choice of `choices`,
/// for the poll to list: none that the agent's options leave without a choice, and none
/// that picks the same choice as one listed before it (`reject` where only `deny` refuses).
pub fn typed_answers(choices: &[Choice]) -> Vec<&'static str> {
    let words = [
        ("allow", Reply::Allow),
        ("always", Reply::Always),
        ("deny", Reply::Deny),
        ("reject", Reply::Reject),
    ];
    let mut picked: Vec<usize> = Vec::new();
    let mut listed = Vec::new();
    for (word, reply) in words {
        if let Some(choice) = pick(choices, &reply)
            && !picked.contains(&choice.number)
        {
            picked.push(choice.number);
            listed.push(word);
        }
    }
    listed
}

/// The choice a reaction key stands for, ignoring emoji presentation selectors.
pub fn by_reaction<'a>(choices: &'a [Choice], key: &str) -> Option<&'a Choice> {
    let key = normalise(key);
    choices.iter().find(|c| normalise(&c.emoji) == key)
}

/// Whether a reaction key is the stop emoji, with or without a presentation selector.
pub fn is_stop_key(key: &str) -> bool {
    normalise(key) == STOP_EMOJI
}

/// The most answers a native poll may have (MSC3381); a poll with more choices is asked
/// with reactions.
pub const MAX_NATIVE_ANSWERS: usize = 20;

/// The answer ID of a native poll's Stop choice: fixed, so the gateway can tell a stop
/// without the poll (only those who may stop turns may use it).
pub const STOP_ANSWER: &str = "stop";

/// A native poll's answers for `choices`: a choice's number is its answer's ID (Stop has
/// [`STOP_ANSWER`]), its emoji and label the answer's text.
pub fn native_answers(choices: &[Choice]) -> Vec<PollAnswer> {
    (choices.iter())
        .map(|c| PollAnswer {
            id: match c.decision {
                Decision::Stop => STOP_ANSWER.to_owned(),
                Decision::Select(_) => c.number.to_string(),
            },
            text: format!("{} {}", c.emoji, c.label),
        })
        .collect()
}

/// The choice a native poll's answer ID stands for (see [`native_answers`]).
pub fn by_answer<'a>(choices: &'a [Choice], id: &str) -> Option<&'a Choice> {
    choices.iter().find(|c| match c.decision {
        Decision::Stop => id == STOP_ANSWER,
        Decision::Select(_) => id == c.number.to_string(),
    })
}

/// The option that answers a poll nobody answered in time: a refusal, the milder one
/// first (nobody decided "never"). `None` when the agent offered no refusal at all.
pub fn expiry_option(options: &[PermissionOption]) -> Option<&PermissionOption> {
    let find = |kind| options.iter().find(|o| o.kind == kind);
    find(PermissionKind::RejectOnce).or_else(|| find(PermissionKind::RejectAlways))
}

/// The key without variation selectors, so `❌` and `❌\u{fe0f}` match.
fn normalise(key: &str) -> String {
    key.chars().filter(|c| *c != '\u{fe0f}').collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fakes::usual_options;
    use crate::model::agent::{ToolCallFields, ToolKind, ToolStatus};
    use crate::render::cards::{PollOutcome, PollView, poll, poll_settled};
    use std::time::Duration;

    fn option(id: &str, kind: PermissionKind) -> PermissionOption {
        PermissionOption {
            id: id.into(),
            name: id.into(),
            kind,
        }
    }

    fn table(options: &[PermissionOption]) -> Vec<(String, String)> {
        choices(options, "Stop")
            .into_iter()
            .map(|c| {
                let id = match c.decision {
                    Decision::Select(o) => o.id.to_string(),
                    Decision::Stop => "STOP".into(),
                };
                (c.emoji, id)
            })
            .collect()
    }

    #[test]
    fn emoji_by_kind_with_reject_always_as_the_main_refusal() {
        let expected: Vec<(String, String)> = [
            ("✅", "allow"),
            ("🔁", "allow_always"),
            ("✋", "reject"),
            ("❌", "never"),
            ("🛑", "STOP"),
        ]
        .iter()
        .map(|(e, i)| (e.to_string(), i.to_string()))
        .collect();
        assert_eq!(table(&usual_options()), expected);
    }

    #[test]
    fn a_native_polls_answers_are_the_choices_and_each_id_picks_its_choice_back() {
        let choices = choices(&usual_options(), "Stop the turn");
        let answers = native_answers(&choices);
        let shown: Vec<(&str, &str)> = (answers.iter())
            .map(|a| (a.id.as_str(), a.text.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                ("1", "✅ Allow"),
                ("2", "🔁 Allow bash for this session"),
                ("3", "✋ Reject"),
                ("4", "❌ Never allow bash in this session"),
                (STOP_ANSWER, "🛑 Stop the turn"),
            ]
        );
        for (answer, choice) in answers.iter().zip(&choices) {
            assert_eq!(by_answer(&choices, &answer.id), Some(choice));
        }
        // An ID of no answer (a forged response, another poll's) picks nothing.
        for id in ["0", "6", "allow", "", " 1"] {
            assert_eq!(by_answer(&choices, id), None, "{id:?}");
        }
    }

    #[test]
    fn the_poll_style_is_read_from_the_config_and_defaults_to_reactions() {
        let read = |toml_text: &str| toml::from_str::<PermissionSettings>(toml_text);
        assert_eq!(read("").unwrap().poll, PollStyle::Reactions);
        assert_eq!(read("poll = \"native\"").unwrap().poll, PollStyle::Native);
        assert_eq!(read("poll = \"both\"").unwrap().poll, PollStyle::Both);
        assert!(read("poll = \"buttons\"").is_err());
        assert!(PollStyle::Both.is_native() && PollStyle::Both.reacts());
        assert!(PollStyle::Native.is_native() && !PollStyle::Native.reacts());
        assert!(!PollStyle::Reactions.is_native() && PollStyle::Reactions.reacts());
    }

    #[test]
    fn reject_once_is_the_main_refusal_when_nothing_else_refuses() {
        let options = [
            option("yes", PermissionKind::AllowOnce),
            option("no", PermissionKind::RejectOnce),
        ];
        let t = table(&options);
        assert_eq!(t[1], ("❌".to_string(), "no".to_string()));
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn a_second_option_of_one_kind_gets_its_keycap() {
        let options = [
            option("a", PermissionKind::AllowOnce),
            option("b", PermissionKind::AllowOnce),
        ];
        let t = table(&options);
        assert_eq!(t[0].0, "✅");
        assert_eq!(t[1].0, "2️⃣");
    }

    #[test]
    fn replies_pick_choices() {
        let c = choices(&usual_options(), "Stop");
        let id = |r: Reply| {
            pick(&c, &r).map(|c| match &c.decision {
                Decision::Select(o) => o.id.to_string(),
                Decision::Stop => "STOP".into(),
            })
        };
        assert_eq!(id(Reply::Allow).as_deref(), Some("allow"));
        assert_eq!(id(Reply::Always).as_deref(), Some("allow_always"));
        assert_eq!(id(Reply::Deny).as_deref(), Some("never"));
        assert_eq!(id(Reply::Reject).as_deref(), Some("reject"));
        assert_eq!(id(Reply::Number(2)).as_deref(), Some("allow_always"));
        assert_eq!(id(Reply::Number(5)).as_deref(), Some("STOP"));
        assert_eq!(id(Reply::Number(6)), None);
        assert_eq!(id(Reply::Emoji("❌".into())).as_deref(), Some("never"));
        let only_once = choices(&[option("no", PermissionKind::RejectOnce)], "Stop");
        assert!(pick(&only_once, &Reply::Reject).is_some());
        assert!(pick(&only_once, &Reply::Always).is_none());
    }

    #[test]
    fn a_poll_lists_only_the_typed_answers_its_options_take() {
        let all = choices(&crate::core::fakes::usual_options(), "Stop");
        assert_eq!(typed_answers(&all), ["allow", "always", "deny", "reject"]);
        let once = choices(
            &[
                option("yes", PermissionKind::AllowOnce),
                option("no", PermissionKind::RejectOnce),
            ],
            "Stop",
        );
        // `reject` would pick the same refusal as `deny`.
        assert_eq!(typed_answers(&once), ["allow", "deny"]);
        let never = choices(&[option("never", PermissionKind::RejectAlways)], "Stop");
        assert_eq!(typed_answers(&never), ["deny"]);
        assert!(typed_answers(&[]).is_empty());
    }

    #[test]
    fn parse_reply_table() {
        let table: &[(&str, Option<Reply>)] = &[
            ("2", Some(Reply::Number(2))),
            (" 3 ", Some(Reply::Number(3))),
            ("✅", Some(Reply::Emoji("✅".into()))),
            ("❌\u{fe0f}", Some(Reply::Emoji("❌".into()))),
            ("yes", None),
            ("2 please", None),
            ("", None),
        ];
        for (body, expected) in table {
            assert_eq!(&parse_reply(body), expected, "{body:?}");
        }
    }

    #[test]
    fn reactions_match_with_or_without_a_presentation_selector() {
        let c = choices(&usual_options(), "Stop");
        assert_eq!(by_reaction(&c, "❌\u{fe0f}").unwrap().label, c[3].label);
        assert_eq!(by_reaction(&c, "🛑").unwrap().decision, Decision::Stop);
        assert!(by_reaction(&c, "👍").is_none());
        assert!(is_stop_key("🛑\u{fe0f}") && is_stop_key("🛑") && !is_stop_key("⏹️"));
    }

    #[test]
    fn expiry_prefers_the_milder_refusal() {
        assert_eq!(expiry_option(&usual_options()).unwrap().id, "reject");
        let only_never = [
            option("ok", PermissionKind::AllowOnce),
            option("never", PermissionKind::RejectAlways),
        ];
        assert_eq!(expiry_option(&only_never).unwrap().id, "never");
        assert!(expiry_option(&[option("ok", PermissionKind::AllowOnce)]).is_none());
    }

    /// How a poll built from the agent's options reads (the wording is `render::cards`').
    #[test]
    fn a_poll_lists_each_option_with_its_emoji_and_own_name() {
        let tool = ToolCallFields {
            id: "t1".into(),
            title: Some("bash: ls".into()),
            kind: Some(ToolKind::Execute),
            status: Some(ToolStatus::Pending),
            raw_input: Some(serde_json::json!({"command": "ls -la"})),
            ..Default::default()
        };
        let c = choices(&usual_options(), "Stop the agent");
        let m = poll(&PollView {
            agent: "Demo",
            tool: &tool,
            choices: &c,
            typed: &typed_answers(&c),
            prefix: "!",
            timeout: Duration::from_secs(600),
        });
        assert!(!m.notice, "a poll asks for attention");
        let lines: Vec<&str> = m.body.lines().collect();
        assert_eq!(
            lines[0],
            "🔐 Demo asks to use a tool: 💻 bash: ls (execute)"
        );
        assert_eq!(lines[1], "$ ls -la");
        assert!(lines.contains(&"1. ✅ Allow"));
        assert!(lines.contains(&"4. ❌ Never allow bash in this session"));
        assert!(lines.contains(&"5. 🛑 Stop the agent"));
        assert!(
            m.body.contains(
                "Reply to this message with !allow, !always, !deny, !reject or a number."
            ),
            "{}",
            m.body
        );
        assert!(m.body.contains("refused after 10 min."), "{}", m.body);
        let settled = poll_settled(
            "Demo",
            &tool,
            &PollOutcome::Chosen {
                by: "@alice:x".into(),
                emoji: "✅".into(),
                label: "Allow".into(),
                refusal: false,
            },
        );
        assert!(settled.body.starts_with("🔐 Demo asked"));
        assert!(settled.body.ends_with("✅ Allow, chosen by @alice:x"));
        assert!(!settled.body.contains("1. ✅"));
    }

    proptest::proptest! {
        /// Any text is read as a typed poll answer or not, without panicking.
        #[test]
        fn any_text_is_a_typed_answer_or_not(body in "\\PC*") {
            let _ = parse_reply(&body);
        }
    }
}
