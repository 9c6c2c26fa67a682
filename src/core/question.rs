//! Questions from the agent, the pure part: which choices a question's poll offers, what
//! picking one answers, and how a typed answer is read into the fields the agent asked
//! for. The flow (posting, waiting, expiry, who may answer) is the permission polls' own,
//! in `core::approvals`; the wording is in `render::cards::question`. See
//! `docs/acp-client.md`.

use crate::model::agent::{PermissionKind, PermissionOption};
use crate::model::ids::PermissionOptionId;
use crate::model::poll::{Choice, Decision};
use crate::model::question::{Field, FieldKind, Question, QuestionAnswer, Value};

/// Keycap emoji for the values of a choice.
const KEYCAPS: [&str; 9] = ["1️⃣", "2️⃣", "3️⃣", "4️⃣", "5️⃣", "6️⃣", "7️⃣", "8️⃣", "9️⃣"];
/// The option that declines to answer.
const DECLINE: &str = "decline";
/// The option that says a link was opened.
const DONE: &str = "done";

/// The one field a poll answers by a pick: a choice of at most nine values, or yes/no.
fn picked_field(question: &Question) -> Option<&Field> {
    match question.fields.as_slice() {
        [field] => match &field.kind {
            FieldKind::Choice(values) if values.len() <= KEYCAPS.len() => Some(field),
            FieldKind::Boolean => Some(field),
            _ => None,
        },
        _ => None,
    }
}

/// Whether the question is answered by typing (a reply to it), rather than by a pick.
pub fn typed(question: &Question) -> bool {
    question.url.is_none() && picked_field(question).is_none()
}

/// The poll's choices: one per value (or yes/no, or "done" for a link), then Decline, then
/// Stop. A typed question offers only Decline and Stop.
pub fn choices(question: &Question, stop_label: &str) -> Vec<Choice> {
    let option = |id: &str, name: &str, kind| PermissionOption {
        id: PermissionOptionId::new(id),
        name: name.to_owned(),
        kind,
    };
    let mut picks: Vec<(&str, PermissionOption)> = Vec::new();
    if question.url.is_some() {
        picks.push(("✅", option(DONE, "Done", PermissionKind::AllowOnce)));
    } else if let Some(field) = picked_field(question) {
        match &field.kind {
            FieldKind::Boolean => {
                picks.push(("👍", option("yes", "Yes", PermissionKind::AllowOnce)));
                picks.push(("👎", option("no", "No", PermissionKind::AllowOnce)));
            }
            FieldKind::Choice(values) => {
                for (i, (_, label)) in values.iter().enumerate() {
                    let id = format!("pick:{i}");
                    picks.push((KEYCAPS[i], option(&id, label, PermissionKind::AllowOnce)));
                }
            }
            _ => {}
        }
    }
    picks.push(("❌", option(DECLINE, "Decline", PermissionKind::RejectOnce)));
    let mut out: Vec<Choice> = picks
        .into_iter()
        .enumerate()
        .map(|(i, (emoji, option))| Choice {
            number: i + 1,
            emoji: emoji.to_owned(),
            label: option.name.clone(),
            decision: Decision::Select(option),
        })
        .collect();
    out.push(Choice {
        number: out.len() + 1,
        emoji: super::poll::STOP_EMOJI.to_owned(),
        label: stop_label.to_owned(),
        decision: Decision::Stop,
    });
    out
}

/// The answer picking option `id` of the question's poll gives.
pub fn answer_for(question: &Question, id: &PermissionOptionId) -> QuestionAnswer {
    let id = id.as_str();
    if id == DECLINE {
        return QuestionAnswer::Declined;
    }
    if id == DONE {
        return QuestionAnswer::Accepted(Vec::new());
    }
    let Some(field) = picked_field(question) else {
        return QuestionAnswer::Declined;
    };
    let value = match (&field.kind, id) {
        (FieldKind::Boolean, "yes") => Value::Boolean(true),
        (FieldKind::Boolean, "no") => Value::Boolean(false),
        (FieldKind::Choice(values), id) => {
            let picked = id
                .strip_prefix("pick:")
                .and_then(|i| i.parse::<usize>().ok())
                .and_then(|i| values.get(i));
            match picked {
                Some((value, _)) => Value::Text(value.clone()),
                None => return QuestionAnswer::Declined,
            }
        }
        _ => return QuestionAnswer::Declined,
    };
    QuestionAnswer::Accepted(vec![(field.name.clone(), value)])
}

/// What a person types to answer a typed question, for the question's message.
pub fn hint(question: &Question) -> String {
    match question.fields.as_slice() {
        [field] => describe(&field.kind),
        fields => {
            let lines: Vec<String> = fields
                .iter()
                .map(|f| {
                    let optional = if f.required { "" } else { ", may be left out" };
                    format!("`{}: …` ({}{optional})", f.name, describe(&f.kind))
                })
                .collect();
            format!("one line per field: {}", lines.join(", "))
        }
    }
}

fn describe(kind: &FieldKind) -> String {
    match kind {
        FieldKind::Text => "text".into(),
        FieldKind::Integer {
            min: Some(min),
            max: Some(max),
        } => format!("a whole number from {min} to {max}"),
        FieldKind::Integer { .. } => "a whole number".into(),
        FieldKind::Number => "a number".into(),
        FieldKind::Boolean => "yes or no".into(),
        FieldKind::Choice(values) => format!("one of: {}", values_list(values)),
        FieldKind::Choices(values) => {
            format!("any of, separated by commas: {}", values_list(values))
        }
    }
}

fn values_list(values: &[(String, String)]) -> String {
    let names: Vec<&str> = values.iter().map(|(v, _)| v.as_str()).collect();
    names.join(", ")
}

/// A typed answer read into the question's fields: the whole text for a question of one
/// field, else one `name: value` line per field. `Err` says what is wrong, for the person.
pub fn parse(question: &Question, text: &str) -> Result<Vec<(String, Value)>, String> {
    let text = text.trim();
    if let [field] = question.fields.as_slice() {
        return Ok(vec![(field.name.clone(), value_of(field, text)?)]);
    }
    let mut out = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("“{line}” is not `name: value`"));
        };
        let name = name.trim();
        let Some(field) = question
            .fields
            .iter()
            .find(|f| f.name == name || f.title.as_deref() == Some(name))
        else {
            return Err(format!("there is no field “{name}”"));
        };
        if out.iter().any(|(n, _)| n == &field.name) {
            return Err(format!("“{name}” is given twice"));
        }
        out.push((field.name.clone(), value_of(field, value.trim())?));
    }
    if let Some(missing) = question
        .fields
        .iter()
        .find(|f| f.required && !out.iter().any(|(n, _)| n == &f.name))
    {
        return Err(format!("“{}” is needed", missing.name));
    }
    Ok(out)
}

fn value_of(field: &Field, text: &str) -> Result<Value, String> {
    let wrong = || format!("“{}” should be {}", field.name, describe(&field.kind));
    if text.is_empty() {
        return Err(wrong());
    }
    let is = |values: &[(String, String)], v: &str| {
        values
            .iter()
            .find(|(value, label)| value.eq_ignore_ascii_case(v) || label.eq_ignore_ascii_case(v))
            .map(|(value, _)| value.clone())
    };
    match &field.kind {
        FieldKind::Text => Ok(Value::Text(text.to_owned())),
        FieldKind::Integer { min, max } => match text.parse::<i64>() {
            Ok(n) if min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m) => {
                Ok(Value::Integer(n))
            }
            _ => Err(wrong()),
        },
        FieldKind::Number => text.parse().map(Value::Number).map_err(|_| wrong()),
        FieldKind::Boolean => match text.to_ascii_lowercase().as_str() {
            "yes" | "y" | "true" | "👍" => Ok(Value::Boolean(true)),
            "no" | "n" | "false" | "👎" => Ok(Value::Boolean(false)),
            _ => Err(wrong()),
        },
        FieldKind::Choice(values) => is(values, text).map(Value::Text).ok_or_else(wrong),
        FieldKind::Choices(values) => text
            .split(',')
            .map(|v| is(values, v.trim()))
            .collect::<Option<Vec<String>>>()
            .map(Value::List)
            .ok_or_else(wrong),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, kind: FieldKind, required: bool) -> Field {
        Field {
            name: name.into(),
            title: None,
            kind,
            required,
        }
    }

    fn ask(fields: Vec<Field>) -> Question {
        Question {
            text: "?".into(),
            fields,
            url: None,
        }
    }

    fn colours() -> FieldKind {
        FieldKind::Choice(vec![
            ("red".into(), "Red".into()),
            ("green".into(), "Green".into()),
        ])
    }

    #[test]
    fn a_choice_is_a_poll_of_its_values_and_a_pick_answers_its_value() {
        let q = ask(vec![field("colour", colours(), true)]);
        assert!(!typed(&q));
        let choices = choices(&q, "Stop");
        let lines: Vec<(&str, &str)> = choices
            .iter()
            .map(|c| (c.emoji.as_str(), c.label.as_str()))
            .collect();
        assert_eq!(
            lines,
            [
                ("1️⃣", "Red"),
                ("2️⃣", "Green"),
                ("❌", "Decline"),
                ("🛑", "Stop")
            ]
        );
        let Decision::Select(green) = &choices[1].decision else {
            panic!()
        };
        assert_eq!(
            answer_for(&q, &green.id),
            QuestionAnswer::Accepted(vec![("colour".into(), Value::Text("green".into()))])
        );
        assert_eq!(answer_for(&q, &"decline".into()), QuestionAnswer::Declined);
        assert_eq!(answer_for(&q, &"pick:7".into()), QuestionAnswer::Declined);
    }

    #[test]
    fn yes_no_and_links_are_polls_and_the_rest_is_typed() {
        let yes_no = ask(vec![field("ok", FieldKind::Boolean, true)]);
        assert_eq!(
            answer_for(&yes_no, &"no".into()),
            QuestionAnswer::Accepted(vec![("ok".into(), Value::Boolean(false))])
        );
        let link = Question {
            url: Some("https://example.org/login".into()),
            ..ask(vec![])
        };
        assert!(!typed(&link));
        assert_eq!(
            answer_for(&link, &"done".into()),
            QuestionAnswer::Accepted(vec![])
        );
        let text = ask(vec![field("name", FieldKind::Text, true)]);
        assert!(typed(&text));
        let labels: Vec<String> = choices(&text, "Stop")
            .into_iter()
            .map(|c| c.label)
            .collect();
        assert_eq!(labels, ["Decline", "Stop"]);
    }

    #[test]
    fn typed_answers_are_read_into_fields_or_say_what_is_wrong() {
        let one = ask(vec![field(
            "n",
            FieldKind::Integer {
                min: Some(1),
                max: Some(5),
            },
            true,
        )]);
        let form = ask(vec![
            field("name", FieldKind::Text, true),
            field(
                "count",
                FieldKind::Integer {
                    min: None,
                    max: None,
                },
                true,
            ),
            field("fast", FieldKind::Boolean, false),
            field(
                "tags",
                FieldKind::Choices(vec![("a".into(), "A".into()), ("b".into(), "B".into())]),
                false,
            ),
        ]);
        type Expected<'a> = Result<Vec<(&'a str, Value)>, &'a str>;
        let table: Vec<(&Question, &str, Expected)> = vec![
            (&one, " 3 ", Ok(vec![("n", Value::Integer(3))])),
            (&one, "9", Err("“n” should be a whole number from 1 to 5")),
            (
                &one,
                "three",
                Err("“n” should be a whole number from 1 to 5"),
            ),
            (
                &form,
                "name: Ada Lovelace\ncount: 3\nfast: yes\ntags: a, B",
                Ok(vec![
                    ("name", Value::Text("Ada Lovelace".into())),
                    ("count", Value::Integer(3)),
                    ("fast", Value::Boolean(true)),
                    ("tags", Value::List(vec!["a".into(), "b".into()])),
                ]),
            ),
            (&form, "name: Ada", Err("“count” is needed")),
            (
                &form,
                "name: Ada\ncount: many",
                Err("“count” should be a whole number"),
            ),
            (&form, "Ada", Err("“Ada” is not `name: value`")),
            (
                &form,
                "name: A\ncount: 1\ncolour: red",
                Err("there is no field “colour”"),
            ),
            (
                &form,
                "name: A\nname: B\ncount: 1",
                Err("“name” is given twice"),
            ),
            (
                &form,
                "name: A\ncount: 1\ntags: c",
                Err("“tags” should be any of, separated by commas: a, b"),
            ),
        ];
        for (q, text, expected) in table {
            let expected = expected
                .map(|v| {
                    v.into_iter()
                        .map(|(n, v)| (n.to_owned(), v))
                        .collect::<Vec<_>>()
                })
                .map_err(str::to_owned);
            assert_eq!(parse(q, text), expected, "{text:?}");
        }
        assert_eq!(hint(&one), "a whole number from 1 to 5");
        assert!(hint(&form).starts_with("one line per field: `name: …` (text), `count: …`"));
    }
}
