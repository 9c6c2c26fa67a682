//! A webhook's prompt, filled from the request's JSON (`{{ref}}`,
//! `{{head_commit.message}}`): the operator writes the template, the sender only the
//! values, which are inserted as text and never read as a template.

use minijinja::{Environment, UndefinedBehavior};

/// How much work filling one prompt may take (loops and filters in the template).
const FUEL: u64 = 50_000;
/// The longest prompt a template makes; the rest is cut.
const MAX_PROMPT_CHARS: usize = 20_000;

/// A template that cannot be read, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TemplateError(pub String);

/// The environment templates are read in: a missing field is empty text, work is bounded.
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Chainable);
    env.set_fuel(Some(FUEL));
    env
}

/// Checks that `template` can be read (at config load).
pub fn check(template: &str) -> Result<(), TemplateError> {
    environment()
        .template_from_str(template)
        .map(|_| ())
        .map_err(|e| TemplateError(e.to_string()))
}

/// `template` filled from `payload`.
pub fn fill(template: &str, payload: &serde_json::Value) -> Result<String, TemplateError> {
    let env = environment();
    let template = env
        .template_from_str(template)
        .map_err(|e| TemplateError(e.to_string()))?;
    let mut text = template
        .render(minijinja::value::Serde(payload))
        .map_err(|e| TemplateError(e.to_string()))?;
    if let Some((cut, _)) = text.char_indices().nth(MAX_PROMPT_CHARS) {
        text.truncate(cut);
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn fields_fill_the_prompt_and_missing_ones_are_empty() {
        let payload = json!({"ref": "refs/heads/main", "head_commit": {"message": "Fix it"},
            "url": "https://ci.example/run/7"});
        let table = [
            (
                "CI failed on {{ref}}: {{head_commit.message}} — logs: {{url}}",
                "CI failed on refs/heads/main: Fix it — logs: https://ci.example/run/7",
            ),
            ("{{ missing.deeper }}|{{ ref }}", "|refs/heads/main"),
            ("{{ head_commit.message | upper }}", "FIX IT"),
        ];
        for (template, prompt) in table {
            assert_eq!(fill(template, &payload).unwrap(), prompt, "{template}");
        }
    }

    #[test]
    fn a_value_is_text_never_a_template_and_bad_templates_are_refused() {
        let payload = json!({"title": "{{ secret }} {% for x in y %}"});
        assert_eq!(
            fill("Issue: {{title}}", &payload).unwrap(),
            "Issue: {{ secret }} {% for x in y %}"
        );
        assert!(check("{{ unclosed").is_err());
        assert!(check("{% for x in items %}{{x}}{% endfor %}").is_ok());
        let endless =
            "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}";
        assert!(fill(endless, &json!({})).is_err(), "out of fuel");
        let long = json!({"body": "y".repeat(MAX_PROMPT_CHARS + 10)});
        assert_eq!(
            fill("{{body}}", &long).unwrap().chars().count(),
            MAX_PROMPT_CHARS
        );
    }
}
