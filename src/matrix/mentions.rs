//! The users a message mentions: its intentional mentions (`m.mentions`) and the mention
//! pills of its HTML body (links to `https://matrix.to/#/@user:server` or `matrix:u/…`),
//! which older clients send without `m.mentions`.

use matrix_sdk::ruma::events::room::message::RoomMessageEventContent;
use matrix_sdk::ruma::{MatrixToUri, MatrixUri, matrix_uri::MatrixId};

use super::ids::Ours;
use crate::model::ids::UserId;

/// Every user `content` mentions, without repeats.
pub fn mentioned_users(content: &RoomMessageEventContent, html: Option<&str>) -> Vec<UserId> {
    let mut users: Vec<UserId> = content
        .mentions
        .iter()
        .flat_map(|m| m.user_ids.iter().map(|u| u.ours()))
        .collect();
    for user in html.map(pills).unwrap_or_default() {
        if !users.contains(&user) {
            users.push(user);
        }
    }
    users
}

/// The users linked from an HTML body.
pub fn pills(html: &str) -> Vec<UserId> {
    let mut users = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("href=") {
        rest = &rest[start + "href=".len()..];
        let Some(quote) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            continue;
        };
        let Some(end) = rest[1..].find(quote) else {
            break;
        };
        let link = rest[1..1 + end].replace("&amp;", "&");
        rest = &rest[1 + end..];
        let id = MatrixToUri::parse(&link)
            .map(|uri| uri.id().clone())
            .or_else(|_| MatrixUri::parse(&link).map(|uri| uri.id().clone()));
        if let Ok(MatrixId::User(user)) = id {
            let user = user.ours();
            if !users.contains(&user) {
                users.push(user);
            }
        }
    }
    users
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pills_table() {
        let table: &[(&str, &[&str])] = &[
            (
                r#"<a href="https://matrix.to/#/@claude:hs">Claude</a>: fix it"#,
                &["@claude:hs"],
            ),
            (
                r#"<a href="https://matrix.to/#/%40codex%3Ahs">Codex</a>"#,
                &["@codex:hs"],
            ),
            (
                r#"<a href='matrix:u/claude:hs'>Claude</a>"#,
                &["@claude:hs"],
            ),
            (
                r#"<a href="https://matrix.to/#/!room:hs">a room</a> <a href="https://example.org">x</a>"#,
                &[],
            ),
            (
                r#"<a href="https://matrix.to/#/@a:hs">A</a> and <a href="https://matrix.to/#/@a:hs">A</a>"#,
                &["@a:hs"],
            ),
            ("no links at all", &[]),
            (r#"<a href=broken>"#, &[]),
        ];
        for (html, expected) in table {
            let found = pills(html);
            let found: Vec<&str> = found.iter().map(UserId::as_str).collect();
            assert_eq!(found, expected.to_vec(), "{html}");
        }
    }
}
