//! The demo agent's `%ask-…` directives: questions to the room through the client's
//! `elicitation/create`, as agents that ask their user do.

use super::turn::Turn;

use agent_client_protocol::v1::schema::{
    CreateElicitationRequest, ElicitationAction, ElicitationFormMode, ElicitationMode,
    ElicitationSchema, ElicitationSessionScope, ElicitationUrlMode, StringPropertySchema,
};

/// The question a directive asks: `None` when the directive is not one of these.
fn asked(session: &str, word: &str, arg: &str) -> Option<CreateElicitationRequest> {
    let scope = || ElicitationSessionScope::new(session.to_owned());
    let form = |schema: ElicitationSchema, text: &str| {
        let mode = ElicitationMode::Form(ElicitationFormMode::new(scope(), schema));
        CreateElicitationRequest::new(mode, text)
    };
    Some(match word {
        "ask-choice" => {
            let (text, values) = arg.split_once('|').unwrap_or((arg, ""));
            let values: Vec<String> = values.split(',').map(|v| v.trim().to_owned()).collect();
            let schema = ElicitationSchema::new().property(
                "choice",
                StringPropertySchema::new().enum_values(values),
                true,
            );
            form(schema, text.trim())
        }
        "ask-yes" => form(ElicitationSchema::new().boolean("ok", true), arg),
        "ask-text" => form(ElicitationSchema::new().string("answer", true), arg),
        "ask-form" => {
            let schema = ElicitationSchema::new()
                .string("name", true)
                .integer("count", 1, 100, true)
                .boolean("fast", false);
            form(schema, arg)
        }
        "ask-url" => {
            let (url, text) = arg.split_once(' ').unwrap_or((arg, "Open this link"));
            let mode = ElicitationMode::Url(ElicitationUrlMode::new(scope(), "demo-1", url));
            CreateElicitationRequest::new(mode, text)
        }
        _ => return None,
    })
}

impl Turn {
    /// `%ask-choice TEXT | A, B, C`, `%ask-yes TEXT`, `%ask-text TEXT`, `%ask-form TEXT`
    /// (name, count from 1 to 100, fast: optional), `%ask-url URL TEXT`: asks the room
    /// and says `elicitation: accept {…}`, `decline` or `cancel`. `Ok(false)`: not one of
    /// these.
    pub(super) async fn ask(
        &self,
        word: &str,
        arg: &str,
    ) -> Result<bool, agent_client_protocol::Error> {
        let Some(request) = asked(&self.session, word, arg) else {
            return Ok(false);
        };
        if !self.client.contains("elicitation: yes") {
            self.say("elicitation not offered\n")?;
            return Ok(true);
        }
        let response = self.cx.send_request(request).block_task().await?;
        let said = match response.action {
            ElicitationAction::Accept(accept) => format!(
                "elicitation: accept {}",
                serde_json::to_string(&accept.content).unwrap_or_default()
            ),
            ElicitationAction::Decline => "elicitation: decline".into(),
            ElicitationAction::Cancel => "elicitation: cancel".into(),
            _ => "elicitation: ?".into(),
        };
        self.say(&format!("{said}\n"))?;
        Ok(true)
    }
}
