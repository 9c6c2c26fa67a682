//! An agent's secrets (the values of its configured and inherited variables: API keys) never
//! reach a room: whatever the agent says, its tool output and its error texts are masked
//! on their way out, in the text and in its HTML. A reply streams in edits, so a secret cut
//! by an edit (the start of a key, the rest still to come) is masked too: every edit stays
//! in the room's history.

use std::sync::Arc;

use crate::core::chat::{ChatPort, Decorated, Decoration};
use crate::model::OutMessage;
use crate::model::media::OutAttachment;

/// What a secret is replaced with.
pub const MASK: &str = "[redacted]";
/// Shortest start of a secret masked at the end of a cut text (shorter ones are ordinary
/// text too often).
const MIN_PARTIAL: usize = 6;

/// `text` with every secret, and every start of one where the text (or its HTML element)
/// ends, replaced by [`MASK`]. `secrets` come longest first.
pub fn mask(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    for secret in secrets {
        for form in [secret.clone(), html_escaped(secret)] {
            if out.contains(&form) {
                out = out.replace(&form, MASK);
            }
        }
    }
    for secret in secrets {
        out = mask_cut(&out, secret);
    }
    out
}

/// `text` with each start of `secret` (at least [`MIN_PARTIAL`] bytes) that ends where a
/// cut text would (its end, a line end, a tag or a closing fence) masked.
fn mask_cut(text: &str, secret: &str) -> String {
    let mut out = text.to_owned();
    let mut k = secret.len().saturating_sub(1);
    while k >= MIN_PARTIAL {
        if secret.is_char_boundary(k) {
            let start = &secret[..k];
            let mut from = 0;
            while let Some(found) = out[from..].find(start) {
                let at = from + found;
                let after = at + start.len();
                let next = out[after..].chars().next();
                if matches!(next, None | Some('<' | '\n' | '`' | '…')) {
                    out.replace_range(at..after, MASK);
                    from = at + MASK.len();
                } else {
                    from = after;
                }
            }
        }
        k -= 1;
    }
    out
}

fn html_escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// What masks an agent's secrets in everything its chat port posts and edits.
pub struct MaskedChat {
    /// The agent's secret values, longest first.
    secrets: Vec<String>,
}

impl MaskedChat {
    /// `inner`, masking `secrets`; `inner` itself when there is nothing to mask.
    pub fn wrap(inner: Arc<dyn ChatPort>, mut secrets: Vec<String>) -> Arc<dyn ChatPort> {
        if secrets.is_empty() {
            return inner;
        }
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Decorated::wrap(inner, Self { secrets })
    }

    fn masked(&self, msg: &OutMessage) -> OutMessage {
        // A text file (a tool's whole output, a file of the workspace) is masked like the
        // text of a message.
        let attachment =
            msg.attachment
                .as_ref()
                .map(|file| match std::str::from_utf8(&file.data) {
                    Ok(text) => OutAttachment {
                        data: mask(text, &self.secrets).into_bytes().into(),
                        ..file.clone()
                    },
                    Err(_) => file.clone(),
                });
        OutMessage {
            body: mask(&msg.body, &self.secrets),
            html: msg.html.as_deref().map(|h| mask(h, &self.secrets)),
            attachment,
            ..msg.clone()
        }
    }
}

impl Decoration for MaskedChat {
    fn posted(&self, msg: &OutMessage) -> OutMessage {
        self.masked(msg)
    }

    fn edited(&self, msg: &OutMessage) -> OutMessage {
        self.masked(msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fakes::FakeChat;
    use crate::model::ids::RoomId;
    use crate::model::media::MediaKind;

    fn secrets() -> Vec<String> {
        vec!["sk-live-1234567890".into(), "p&ss<word>".into()]
    }

    #[test]
    fn secrets_whole_and_cut_are_masked_and_lookalikes_are_not() {
        let table = [
            ("key sk-live-1234567890 works", "key [redacted] works"),
            // Cut by a streamed edit: the start is masked at the end of the text, of a
            // line, of an HTML element and of a code block.
            ("key sk-live-12", "key [redacted]"),
            ("key sk-live-12\nmore", "key [redacted]\nmore"),
            ("<p>key sk-live-1234</p>", "<p>key [redacted]</p>"),
            ("```\nsk-live-123\n```", "```\n[redacted]\n```"),
            // Another key that only starts the same way is not this secret.
            ("key sk-live-999 differs", "key sk-live-999 differs"),
            // Too short a start to tell.
            ("the sk-li", "the sk-li"),
            (
                "<code>p&amp;ss&lt;word&gt;</code>",
                "<code>[redacted]</code>",
            ),
        ];
        for (text, expected) in table {
            assert_eq!(mask(text, &secrets()), expected, "{text}");
        }
    }

    #[tokio::test]
    async fn everything_posted_and_edited_is_masked() {
        let fake = Arc::new(FakeChat::default());
        let chat = MaskedChat::wrap(fake.clone(), secrets());
        let mut msg = OutMessage::notice("failed with sk-live-1234567890");
        msg.html = Some("<b>sk-live-1234567890</b>".into());
        let id = chat.send(&RoomId::from("!r"), "t1", &msg).await.unwrap();
        chat.edit(
            &RoomId::from("!r"),
            &id,
            &OutMessage::notice("now sk-live-123"),
        )
        .await
        .unwrap();
        let shown = fake.shown("!r");
        assert!(shown.iter().all(|t| !t.contains("sk-live-12")), "{shown:?}");
        assert!(shown.iter().any(|t| t.contains("[redacted]")), "{shown:?}");
        // A text file posted (a tool's whole output) is masked too; a picture is left whole.
        let output = OutMessage::file(OutAttachment {
            kind: MediaKind::File,
            name: "env-output.txt".into(),
            mimetype: "text/plain".into(),
            data: b"API_KEY=sk-live-1234567890\n".to_vec().into(),
        });
        chat.send(&RoomId::from("!r"), "t2", &output).await.unwrap();
        let posted = fake.messages("!r").pop().unwrap().attachment.unwrap();
        assert_eq!(&*posted.data, b"API_KEY=[redacted]\n");
    }
}
