//! Whether a webhook request comes from its sender: checked the way each sender signs
//! (`docs/schedules.md`, "Webhooks"). Pure: headers, body and clock are arguments.

use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

/// How a webhook's sender signs its requests (`signature` in a `[[webhooks]]` table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub enum Signing {
    /// GitHub: `X-Hub-Signature-256: sha256=HEX`, HMAC-SHA256 of the body with the secret;
    /// the delivery is `X-GitHub-Delivery`.
    #[serde(rename = "github")]
    GitHub,
    /// GitLab: `X-Gitlab-Token` is the secret itself; the delivery is
    /// `X-Gitlab-Event-UUID`.
    #[serde(rename = "gitlab")]
    GitLab,
    /// Any sender: `X-Signature: sha256=HEX`, HMAC-SHA256 of `TIMESTAMP.BODY`, with
    /// `X-Timestamp` (Unix seconds) no older than the allowed age; the delivery is
    /// `X-Delivery-Id`.
    #[serde(rename = "hmac-sha256")]
    HmacSha256,
}

/// Why a request was refused; each has its HTTP status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// It carries no signature (or token) at all.
    #[error("unsigned: the request has no {0} header")]
    Unsigned(&'static str),
    /// Its signature is not the secret's.
    #[error("the signature does not match")]
    BadSignature,
    /// Its timestamp is missing, unreadable, or too far from now (a replay).
    #[error("stale: the request's timestamp is missing or more than {0} s from now")]
    Stale(u64),
}

impl Refused {
    /// The status to answer with: 401 without credentials, 403 with wrong or stale ones.
    pub fn status(&self) -> u16 {
        match self {
            Refused::Unsigned(_) => 401,
            Refused::BadSignature | Refused::Stale(_) => 403,
        }
    }
}

/// A request that passed its check: how a replay of it is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The sender's ID for it (its header), else the body's SHA-256. Not covered by any
    /// signature: whoever saw a delivery can send it again under an ID of their own.
    pub id: String,
    /// What the signature covers, as a key (`signed:` and a hash): the HMAC the sender's
    /// secret gives the body (with its timestamp for `hmac-sha256`), or, for GitLab whose
    /// token signs nothing, the body's SHA-256. The same signed request is the same
    /// delivery, whatever ID it comes with.
    pub signed: String,
}

/// Checks a request signed as `signing` with `secret`: `header` reads a header by its
/// (lower-case) name, `now` is Unix seconds, `max_age` how far a timestamp may be from it.
/// Returns how the delivery is known ([`Delivery`]): a replay repeats its `signed` key,
/// whatever ID it carries.
pub fn check(
    signing: Signing,
    secret: &[u8],
    header: impl Fn(&str) -> Option<String>,
    body: &[u8],
    now: i64,
    max_age: Duration,
) -> Result<Delivery, Refused> {
    let (id_header, signed) = match signing {
        Signing::GitHub => {
            let name = "x-hub-signature-256";
            let given = header(name).ok_or(Refused::Unsigned("X-Hub-Signature-256"))?;
            verify(secret, &[body], given.strip_prefix("sha256=").unwrap_or(""))?;
            ("x-github-delivery", sign(secret, &[body]))
        }
        Signing::GitLab => {
            let given = header("x-gitlab-token").ok_or(Refused::Unsigned("X-Gitlab-Token"))?;
            // Compared as MACs of both, so the time taken says nothing about the secret.
            let mac = |text: &[u8]| Sha256::digest([secret, b"\0", text].concat());
            if mac(given.as_bytes()) != mac(secret) {
                return Err(Refused::BadSignature);
            }
            ("x-gitlab-event-uuid", hex(&Sha256::digest(body)))
        }
        Signing::HmacSha256 => {
            let given = header("x-signature").ok_or(Refused::Unsigned("X-Signature"))?;
            let stale = Refused::Stale(max_age.as_secs());
            let stamp = header("x-timestamp").ok_or(stale.clone())?;
            let at: i64 = stamp.trim().parse().map_err(|_| stale.clone())?;
            if (now - at).unsigned_abs() > max_age.as_secs() {
                return Err(stale);
            }
            let signed = [stamp.trim().as_bytes(), b".", body];
            verify(secret, &signed, given.strip_prefix("sha256=").unwrap_or(""))?;
            ("x-delivery-id", sign(secret, &signed))
        }
    };
    let id = header(id_header).map(|id| id.trim().to_owned());
    let id = match id.filter(|id| !id.is_empty() && id.len() <= 200) {
        Some(id) => id,
        None => hex(&Sha256::digest(body)),
    };
    Ok(Delivery {
        id,
        signed: format!("signed:{signed}"),
    })
}

/// Whether `hex_mac` is the HMAC-SHA256 of `parts` (in constant time).
fn verify(secret: &[u8], parts: &[&[u8]], hex_mac: &str) -> Result<(), Refused> {
    let given = unhex(hex_mac).ok_or(Refused::BadSignature)?;
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).map_err(|_| Refused::BadSignature)?;
    for part in parts {
        mac.update(part);
    }
    mac.verify_slice(&given).map_err(|_| Refused::BadSignature)
}

/// The HMAC-SHA256 of `parts` with `secret`, in hex: how a sender signs (and the tests).
pub fn sign(secret: &[u8], parts: &[&[u8]]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key");
    for part in parts {
        mac.update(part);
    }
    hex(&mac.finalize().into_bytes())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    let text = text.trim();
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"it is a secret";
    const AGE: Duration = Duration::from_secs(300);

    fn headers(pairs: &[(&str, String)]) -> impl Fn(&str) -> Option<String> + use<> {
        let pairs: Vec<(String, String)> = (pairs.iter())
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn github_signs_the_body_and_names_the_delivery() {
        let body = br#"{"ref":"main"}"#;
        let good = format!("sha256={}", sign(SECRET, &[body]));
        let id = ("x-github-delivery", "d-1".to_owned());
        let ok = headers(&[("x-hub-signature-256", good.clone()), id.clone()]);
        let delivery = check(Signing::GitHub, SECRET, ok, body, 0, AGE).unwrap();
        assert_eq!(delivery.id, "d-1");
        // The same signed body under another ID is the same delivery; the signature's hex
        // written in capitals is the same signature.
        let again = headers(&[
            (
                "x-hub-signature-256",
                good.to_uppercase().replace("SHA256=", "sha256="),
            ),
            ("x-github-delivery", "d-2".to_owned()),
        ]);
        let replay = check(Signing::GitHub, SECRET, again, body, 0, AGE).unwrap();
        assert_eq!(
            (replay.id.as_str(), &replay.signed),
            ("d-2", &delivery.signed)
        );
        assert!(delivery.signed.starts_with("signed:"));
        let table = [
            (vec![id.clone()], Refused::Unsigned("X-Hub-Signature-256")),
            (
                vec![("x-hub-signature-256", "sha256=00".into())],
                Refused::BadSignature,
            ),
            (
                vec![("x-hub-signature-256", "sha256=zz".into())],
                Refused::BadSignature,
            ),
            (
                vec![(
                    "x-hub-signature-256",
                    format!("sha256={}", sign(b"other", &[body])),
                )],
                Refused::BadSignature,
            ),
        ];
        for (pairs, refused) in table {
            let got = check(Signing::GitHub, SECRET, headers(&pairs), body, 0, AGE);
            assert_eq!(got, Err(refused.clone()), "{pairs:?}");
        }
        // A changed body is not the one signed.
        let ok = headers(&[("x-hub-signature-256", good)]);
        let got = check(Signing::GitHub, SECRET, ok, br#"{"ref":"evil"}"#, 0, AGE);
        assert_eq!(got, Err(Refused::BadSignature));
        assert_eq!(Refused::Unsigned("X").status(), 401);
        assert_eq!(Refused::BadSignature.status(), 403);
    }

    #[test]
    fn gitlab_sends_the_token_and_a_body_without_an_id_is_its_own_delivery() {
        let body = b"{}";
        let token = |t: &str| headers(&[("x-gitlab-token", t.to_owned())]);
        let id = check(
            Signing::GitLab,
            SECRET,
            token("it is a secret"),
            body,
            0,
            AGE,
        )
        .unwrap();
        assert_eq!(id.id, hex(&Sha256::digest(body)), "the body's hash");
        assert_eq!(id.signed, format!("signed:{}", id.id));
        let wrong = check(
            Signing::GitLab,
            SECRET,
            token("it is a secreT"),
            body,
            0,
            AGE,
        );
        assert_eq!(wrong, Err(Refused::BadSignature));
        let none = check(Signing::GitLab, SECRET, headers(&[]), body, 0, AGE);
        assert_eq!(none, Err(Refused::Unsigned("X-Gitlab-Token")));
    }

    #[test]
    fn a_generic_signature_covers_its_timestamp_which_must_be_recent() {
        let body = b"{\"a\":1}";
        let now = 1_800_000_000;
        let signed = |at: i64| {
            let stamp = at.to_string();
            let mac = sign(SECRET, &[stamp.as_bytes(), b".", body]);
            headers(&[
                ("x-signature", format!("sha256={mac}")),
                ("x-timestamp", stamp),
                ("x-delivery-id", "7".into()),
            ])
        };
        let delivery = check(
            Signing::HmacSha256,
            SECRET,
            signed(now - 10),
            body,
            now,
            AGE,
        )
        .unwrap();
        assert_eq!(delivery.id, "7");
        // Signed again at another time, the same body is another delivery.
        let later = check(Signing::HmacSha256, SECRET, signed(now - 5), body, now, AGE);
        assert_ne!(later.unwrap().signed, delivery.signed);
        let old = check(
            Signing::HmacSha256,
            SECRET,
            signed(now - 301),
            body,
            now,
            AGE,
        );
        assert_eq!(old, Err(Refused::Stale(300)));
        // The timestamp changed after signing: the signature no longer matches.
        let mac = sign(SECRET, &[b"100", b".", body]);
        let moved = headers(&[
            ("x-signature", format!("sha256={mac}")),
            ("x-timestamp", now.to_string()),
        ]);
        let got = check(Signing::HmacSha256, SECRET, moved, body, now, AGE);
        assert_eq!(got, Err(Refused::BadSignature));
        let unstamped = headers(&[("x-signature", "sha256=00".into())]);
        let got = check(Signing::HmacSha256, SECRET, unstamped, body, now, AGE);
        assert_eq!(got, Err(Refused::Stale(300)));
    }
}
