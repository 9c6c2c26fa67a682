//! Markdown → Matrix `formatted_body` HTML, with pulldown-cmark.

use pulldown_cmark::{Event, Options, Parser, html};

/// Renders agent Markdown to HTML for `formatted_body`. Returns `None` when the text has no
/// formatting at all, so plain answers stay plain events.
///
/// Raw HTML in the agent's output is escaped rather than passed through: the agent's text is
/// untrusted, and clients differ in how well they sanitise.
pub fn to_html(markdown: &str) -> Option<String> {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES;
    let parser = Parser::new_ext(markdown, options).map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        other => other,
    });
    let mut out = String::with_capacity(markdown.len() * 5 / 4 + 16);
    html::push_html(&mut out, parser);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_has_no_html() {
        assert_eq!(to_html("hello world"), None);
        assert_eq!(to_html(""), None);
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
            let html = to_html(md).unwrap_or_default();
            assert!(html.contains(expected), "{md:?} → {html:?}");
        }
    }

    #[test]
    fn raw_html_is_escaped() {
        let html = to_html("hi <script>alert(1)</script> there").unwrap();
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
    }
}
