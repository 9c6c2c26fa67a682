//! The client's `elicitation/create`: a question the agent asks, translated into ours
//! (`model::question`) for the room to answer, and the answer back into the protocol's
//! (`accept` with the fields, `decline`, `cancel`). See `docs/acp-client.md`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::Responder;
use tokio::sync::oneshot;

use super::sessions::Sessions;
use crate::model::agent::AgentEvent;
use crate::model::ids::AgentId;
use crate::model::question::QuestionRequest;

use agent_client_protocol::v1::schema::{
    CreateElicitationRequest, CreateElicitationResponse, ElicitationAcceptAction,
    ElicitationAction, ElicitationContentValue, ElicitationMode, ElicitationPropertySchema,
    ElicitationScope, MultiSelectItems,
};

use crate::model::question::{Field, FieldKind, Question, QuestionAnswer, Value};

/// The session a question is for and what it asks; `Err` says why it cannot be asked in a
/// room (it belongs to no session, or its mode is unknown).
pub fn question_of(request: &CreateElicitationRequest) -> Result<(String, Question), String> {
    let session = match request.scope() {
        ElicitationScope::Session(s) => s.session_id.0.to_string(),
        _ => return Err("a question outside any session has no room to be asked in".into()),
    };
    let text = request.message.clone();
    let question = match &request.mode {
        ElicitationMode::Form(form) => {
            let schema = &form.requested_schema;
            let required = schema.required.clone().unwrap_or_default();
            let fields = schema
                .properties
                .iter()
                .map(|(name, property)| field(name, property, required.contains(name)))
                .collect::<Result<Vec<Field>, String>>()?;
            if fields.is_empty() {
                return Err("a form without fields".into());
            }
            Question {
                text,
                fields,
                url: None,
            }
        }
        ElicitationMode::Url(url) => Question {
            text,
            fields: Vec::new(),
            url: Some(url.url.clone()),
        },
        _ => return Err("a kind of question this version does not know".into()),
    };
    Ok((session, question))
}

fn field(
    name: &str,
    property: &ElicitationPropertySchema,
    required: bool,
) -> Result<Field, String> {
    let (title, kind) = match property {
        ElicitationPropertySchema::String(s) => {
            let kind = match (&s.one_of, &s.enum_values) {
                (Some(options), _) => FieldKind::Choice(
                    options
                        .iter()
                        .map(|o| (o.value.clone(), o.title.clone()))
                        .collect(),
                ),
                (None, Some(values)) => {
                    FieldKind::Choice(values.iter().map(|v| (v.clone(), v.clone())).collect())
                }
                (None, None) => FieldKind::Text,
            };
            (s.title.clone(), kind)
        }
        ElicitationPropertySchema::Number(n) => (n.title.clone(), FieldKind::Number),
        ElicitationPropertySchema::Integer(i) => (
            i.title.clone(),
            FieldKind::Integer {
                min: i.minimum,
                max: i.maximum,
            },
        ),
        ElicitationPropertySchema::Boolean(b) => (b.title.clone(), FieldKind::Boolean),
        ElicitationPropertySchema::Array(a) => {
            let values = match &a.items {
                MultiSelectItems::String(s) => {
                    s.values.iter().map(|v| (v.clone(), v.clone())).collect()
                }
                MultiSelectItems::Titled(t) => t
                    .options
                    .iter()
                    .map(|o| (o.value.clone(), o.title.clone()))
                    .collect(),
                _ => return Err(format!("field “{name}” is a list of an unknown kind")),
            };
            (a.title.clone(), FieldKind::Choices(values))
        }
        _ => return Err(format!("field “{name}” is of an unknown kind")),
    };
    Ok(Field {
        name: name.to_owned(),
        title,
        kind,
        required,
    })
}

/// Answers `elicitation/create`: the question goes to its session's conversation, and the
/// answer back to the agent whenever the room gives it (off the dispatch loop). A question
/// that cannot be asked in a room is answered `cancel`.
pub fn serve(
    agent: &AgentId,
    sessions: &Arc<Mutex<Sessions>>,
    request: CreateElicitationRequest,
    responder: Responder<CreateElicitationResponse>,
) {
    let (session, question) = match question_of(&request) {
        Ok(asked) => asked,
        Err(why) => {
            tracing::warn!(%agent, why, "a question the room cannot be asked; cancelled");
            let _ = responder.respond(response_of(QuestionAnswer::Cancelled));
            return;
        }
    };
    tracing::info!(%agent, session, "the agent asks the room a question");
    let (reply, answer) = oneshot::channel();
    let event = AgentEvent::Question(QuestionRequest { question, reply });
    sessions
        .lock()
        .expect("sessions poisoned")
        .deliver(&session, event);
    tokio::spawn(async move {
        let answer = answer.await.unwrap_or(QuestionAnswer::Cancelled);
        let _ = responder.respond(response_of(answer));
    });
}

/// The protocol's answer for ours.
pub fn response_of(answer: QuestionAnswer) -> CreateElicitationResponse {
    let action = match answer {
        QuestionAnswer::Accepted(fields) => {
            let content: BTreeMap<String, ElicitationContentValue> = fields
                .into_iter()
                .map(|(name, value)| {
                    let value = match value {
                        Value::Text(t) => ElicitationContentValue::String(t),
                        Value::Integer(i) => ElicitationContentValue::Integer(i),
                        Value::Number(n) => ElicitationContentValue::Number(n),
                        Value::Boolean(b) => ElicitationContentValue::Boolean(b),
                        Value::List(l) => ElicitationContentValue::StringArray(l),
                    };
                    (name, value)
                })
                .collect();
            let content = (!content.is_empty()).then_some(content);
            ElicitationAction::Accept(ElicitationAcceptAction::new().content(content))
        }
        QuestionAnswer::Declined => ElicitationAction::Decline,
        QuestionAnswer::Cancelled => ElicitationAction::Cancel,
    };
    CreateElicitationResponse::new(action)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        ElicitationFormMode, ElicitationSchema, ElicitationSessionScope, ElicitationUrlMode,
        EnumOption, StringPropertySchema,
    };

    #[test]
    fn a_form_becomes_our_fields_and_an_answer_the_protocols() {
        let schema = ElicitationSchema::new()
            .property(
                "colour",
                StringPropertySchema::new().one_of(vec![EnumOption::new("r", "Red")]),
                true,
            )
            .integer("count", 1, 9, false);
        let mode = ElicitationFormMode::new(ElicitationSessionScope::new("s1"), schema);
        let request = CreateElicitationRequest::new(ElicitationMode::Form(mode), "Which?");
        let (session, question) = question_of(&request).unwrap();
        assert_eq!(session, "s1");
        assert_eq!(question.text, "Which?");
        assert_eq!(
            question.fields[0].kind,
            FieldKind::Choice(vec![("r".into(), "Red".into())])
        );
        assert!(question.fields[0].required);
        assert_eq!(
            question.fields[1].kind,
            FieldKind::Integer {
                min: Some(1),
                max: Some(9)
            }
        );
        let response = response_of(QuestionAnswer::Accepted(vec![(
            "colour".into(),
            Value::Text("r".into()),
        )]));
        assert_eq!(
            serde_json::to_value(&response).unwrap(),
            serde_json::json!({"action": "accept", "content": {"colour": "r"}})
        );
        let declined = serde_json::to_value(response_of(QuestionAnswer::Declined)).unwrap();
        assert_eq!(declined, serde_json::json!({"action": "decline"}));
    }

    #[test]
    fn a_link_is_a_question_and_one_without_a_session_is_not_asked() {
        let mode =
            ElicitationUrlMode::new(ElicitationSessionScope::new("s1"), "e1", "https://x.test/a");
        let request = CreateElicitationRequest::new(ElicitationMode::Url(mode), "Sign in");
        let (_, question) = question_of(&request).unwrap();
        assert_eq!(question.url.as_deref(), Some("https://x.test/a"));
        let raw = serde_json::json!({
            "mode": "form", "message": "?", "requestId": 7,
            "requestedSchema": {"type": "object", "properties": {"a": {"type": "string"}}}
        });
        let request: CreateElicitationRequest = serde_json::from_value(raw).unwrap();
        assert!(question_of(&request).is_err());
    }
}
