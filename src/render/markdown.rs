//! Markdown → Matrix `formatted_body` HTML, with pulldown-cmark.

use pulldown_cmark::{CowStr, Event, LinkType, Options, Parser, Tag, TagEnd, html};

/// Which of the agent's Markdown pictures are shown as pictures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pictures {
    /// None: every picture becomes its description and address as text (or a link for
    /// `https`), so a reader's client and homeserver fetch nothing without a click. The
    /// default: an `mxc://` address names a server, which a reader's homeserver asks for
    /// the picture, so a picture could carry an encrypted room's words to any server.
    #[default]
    Links,
    /// Pictures already on a Matrix server (`mxc://`) are shown; any other becomes a link.
    Matrix,
}

/// Renders agent Markdown to HTML for `formatted_body`. Returns `None` when the text has no
/// formatting at all, so plain answers stay plain events.
///
/// The agent's text is untrusted, and clients differ in how well they sanitise: raw HTML is
/// escaped rather than passed through, a link keeps its target only for a safe scheme
/// ([`SAFE_SCHEMES`]; a `javascript:` link becomes its text), and a picture is shown only
/// when `pictures` lets it (only `mxc://` ones ever): any other becomes a link or text, so
/// no client loads an address (which could carry data out) without someone clicking it.
pub fn to_html(markdown: &str, pictures: Pictures) -> Option<String> {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES;
    let events = defuse(Parser::new_ext(markdown, options), pictures);
    let mut out = String::with_capacity(markdown.len() * 5 / 4 + 16);
    html::push_html(&mut out, events.into_iter());
    let trimmed = out.trim_end();
    let plain_paragraph = trimmed
        .strip_prefix("<p>")
        .and_then(|s| s.strip_suffix("</p>"))
        .is_some_and(|inner| {
            !inner.contains('<') && !inner.contains('&') && inner == markdown.trim()
        });
    if plain_paragraph || trimmed.is_empty() {
        None
    } else {
        Some(trimmed.to_owned())
    }
}

/// The link schemes kept in `href`: the web, mail, and Matrix's own.
pub const SAFE_SCHEMES: [&str; 4] = ["https", "http", "mailto", "matrix"];

/// Whether `url` may be a link target: it names one of [`SAFE_SCHEMES`] (any case). Links
/// without a scheme (relative paths) mean nothing in a chat and are dropped too.
fn is_safe_link(url: &str) -> bool {
    url.split_once(':').is_some_and(|(scheme, _)| {
        SAFE_SCHEMES
            .iter()
            .any(|safe| scheme.trim().eq_ignore_ascii_case(safe))
    })
}

/// An open link or image in `defuse`: what its end becomes (`None`: dropped), and the
/// address to show as its text if it turns out to have none (a picture made a link).
type Opened<'a> = (Option<TagEnd>, Option<CowStr<'a>>);

/// What a picture's start becomes: a Matrix picture `pictures` shows stays one; another
/// picture with a safe address becomes a link to it (unless it is inside a link: a link
/// in a link is no HTML); a Matrix picture not shown becomes its description and then its
/// address as text (nothing fetches it); an unsafe one, its description only.
fn picture<'a>(
    link_type: LinkType,
    dest_url: CowStr<'a>,
    title: CowStr<'a>,
    id: CowStr<'a>,
    pictures: Pictures,
    inside_link: bool,
) -> (Opened<'a>, Option<Event<'a>>) {
    let matrix = dest_url.starts_with("mxc://");
    if matrix && pictures == Pictures::Matrix {
        let start = Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        };
        ((Some(TagEnd::Image), None), Some(Event::Start(start)))
    } else if is_safe_link(&dest_url) && !inside_link {
        let opened = (Some(TagEnd::Link), Some(dest_url.clone()));
        let start = Tag::Link {
            link_type: LinkType::Inline,
            dest_url,
            title,
            id,
        };
        (opened, Some(Event::Start(start)))
    } else if matrix {
        ((None, Some(dest_url)), None)
    } else {
        ((None, None), None)
    }
}

/// `events` with raw HTML turned into text, unsafe links into their text, and pictures
/// that `pictures` does not show into links (or their text and address).
fn defuse<'a>(events: impl Iterator<Item = Event<'a>>, pictures: Pictures) -> Vec<Event<'a>> {
    let mut out = Vec::new();
    // The links and images open now (an image may sit inside a link).
    let mut open: Vec<Opened<'a>> = Vec::new();
    for event in events {
        match event {
            Event::Html(raw) | Event::InlineHtml(raw) => out.push(Event::Text(raw)),
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => {
                let keep = is_safe_link(&dest_url);
                open.push((keep.then_some(TagEnd::Link), None));
                if keep {
                    out.push(Event::Start(Tag::Link {
                        link_type,
                        dest_url,
                        title,
                        id,
                    }));
                }
            }
            Event::Start(Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            }) => {
                let inside_link = !open.is_empty();
                let (what, start) = picture(link_type, dest_url, title, id, pictures, inside_link);
                open.push(what);
                out.extend(start);
            }
            Event::End(TagEnd::Link | TagEnd::Image) => {
                let (end, url) = open.pop().unwrap_or((None, None));
                match (end, url) {
                    // A picture made a link: its address is its text if it has none.
                    (Some(end), url) => {
                        let empty = matches!(out.last(), Some(Event::Start(Tag::Link { .. })));
                        if let Some(url) = url.filter(|_| empty) {
                            out.push(Event::Text(url));
                        }
                        out.push(Event::End(end));
                    }
                    // A Matrix picture not shown: its address after its description.
                    (None, Some(url)) => {
                        out.push(Event::Text(format!(" ({url})").into()));
                    }
                    (None, None) => {}
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_has_no_html() {
        assert_eq!(to_html("hello world", Pictures::Links), None);
        assert_eq!(to_html("", Pictures::Links), None);
    }

    #[test]
    fn formatting_renders() {
        let table: &[(&str, &str)] = &[
            ("**bold**", "<strong>bold</strong>"),
            (
                "```rust\nfn main() {}\n```",
                "<pre><code class=\"language-rust\">fn main() {}\n</code></pre>",
            ),
            ("- a\n- b", "<ul>\n<li>a</li>\n<li>b</li>\n</ul>"),
            ("1. a\n2. b", "<ol>\n<li>a</li>\n<li>b</li>\n</ol>"),
            ("| a | b |\n|---|---|\n| 1 | 2 |", "<table>"),
            (
                "[site](https://example.org)",
                "<a href=\"https://example.org\">site</a>",
            ),
            ("`x < y`", "<code>x &lt; y</code>"),
            ("~~gone~~", "<del>gone</del>"),
        ];
        for (md, expected) in table {
            let html = to_html(md, Pictures::Links).unwrap_or_default();
            assert!(html.contains(expected), "{md:?} → {html:?}");
        }
    }

    #[test]
    fn raw_html_is_escaped() {
        let html = to_html("hi <script>alert(1)</script> there", Pictures::Links).unwrap();
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
    }

    #[test]
    fn only_safe_links_survive_and_pictures_become_links_or_text() {
        // (markdown, must contain, must not contain)
        let table: &[(&str, &str, &str)] = &[
            ("[x](javascript:alert(1))", "x", "javascript"),
            ("[x](JavaScript:alert(1))", "x", "href"),
            ("[x](data:text/html;base64,AAAA)", "x", "data:"),
            ("[x](vbscript:msgbox)", "x", "vbscript"),
            ("[x](file:///etc/passwd)", "x", "href"),
            ("[x](relative/path)", "x", "href"),
            ("<javascript:alert(1)>", "javascript:alert(1)", "href"),
            (
                "[x](https://example.org)",
                "href=\"https://example.org\"",
                "<img",
            ),
            (
                "[x](mailto:a@example.org)",
                "href=\"mailto:a@example.org\"",
                "<img",
            ),
            (
                "[x](matrix:u/alice:example.org)",
                "href=\"matrix:u/alice:example.org\"",
                "<img",
            ),
            (
                "![chart](https://tracker.example/p.png?secret=1)",
                "<a href=\"https://tracker.example/p.png?secret=1\">chart</a>",
                "<img",
            ),
            (
                "![](https://tracker.example/p.png)",
                ">https://tracker.example/p.png</a>",
                "<img",
            ),
            ("![pic](javascript:alert(1))", "pic", "javascript"),
            (
                "![pic](mxc://evil.example/c2VjcmV0)",
                "pic (mxc://evil.example/c2VjcmV0)",
                "<img",
            ),
            ("![](mxc://hs/abc)", "(mxc://hs/abc)", "<img"),
            (
                "[![pic](https://t.example/i.png)](https://example.org)",
                "href=\"https://example.org\"",
                "<img",
            ),
        ];
        for (md, present, absent) in table {
            let html = to_html(md, Pictures::Links).unwrap_or_else(|| md.to_string());
            assert!(html.contains(present), "{md:?} → {html:?}");
            assert!(!html.contains(absent), "{md:?} → {html:?}");
        }
    }

    #[test]
    fn matrix_pictures_are_shown_only_when_allowed() {
        let shown = to_html("![pic](mxc://hs/abc)", Pictures::Matrix).unwrap();
        assert!(
            shown.contains("<img src=\"mxc://hs/abc\" alt=\"pic\""),
            "{shown}"
        );
        let elsewhere = to_html("![pic](https://t.example/p.png)", Pictures::Matrix).unwrap();
        assert!(!elsewhere.contains("<img"), "{elsewhere}");
        let linked = to_html(
            "[![pic](mxc://hs/abc)](https://example.org)",
            Pictures::Links,
        )
        .unwrap();
        assert!(
            linked.contains("href=\"https://example.org\"") && !linked.contains("<img"),
            "{linked}"
        );
    }

    proptest::proptest! {
        /// Whatever the agent writes renders without panicking, and never with a
        /// `javascript:` link or a picture from outside Matrix (none at all by default).
        #[test]
        fn any_markdown_renders_without_unsafe_links_or_pictures(
            text in "(\\PC|\\[|\\]|\\(|\\)|!|<|>|javascript:|https://x/|mxc://h/|\n)*",
        ) {
            if let Some(html) = to_html(&text, Pictures::Matrix) {
                let lower = html.to_lowercase();
                proptest::prop_assert!(!lower.contains("href=\"javascript"), "{}", html);
                proptest::prop_assert!(!lower.contains("<img src=\"http"), "{}", html);
                proptest::prop_assert!(!lower.contains("<script"), "{}", html);
            }
            if let Some(html) = to_html(&text, Pictures::Links) {
                proptest::prop_assert!(!html.to_lowercase().contains("<img"), "{}", html);
            }
        }
    }
}
