//! Every file under `src/`, parsed: its module path, its production functions and their
//! lengths, its glob imports and every path it names of ours.

use std::path::{Path, PathBuf};

use quote::ToTokens;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};

/// A function with a body, outside test code.
#[derive(Debug)]
pub struct Function {
    /// `name`, or `Type::name` for a method.
    pub name: String,
    /// The line of its `fn`.
    pub line: usize,
    /// From its `fn` to its closing brace.
    pub lines: usize,
}

/// One `.rs` file under `src/`.
pub struct SourceFile {
    /// Below `src/`, with `/` between folders: `core/channel/turn.rs`.
    pub relative: String,
    /// Its module path: `["core", "channel", "turn"]`; `mod.rs` and `lib.rs` name their
    /// folder's module, `main.rs` the binary (`["main"]`).
    pub module: Vec<String>,
    pub line_count: usize,
    /// A test module's file, or a fake's: only the import rules apply to it.
    pub is_test: bool,
    /// The first `//!` sentence: what the file is for.
    pub summary: String,
    pub functions: Vec<Function>,
    /// Lines of glob imports of our own modules (`use super::*`) outside test code.
    pub parent_globs: Vec<usize>,
    /// Every path of ours the file names, test code included, made absolute
    /// (`crate::`, `super::` and `self::` resolved).
    pub paths: Vec<Vec<String>>,
}

pub fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

pub fn read_tree(root: &Path) -> Vec<SourceFile> {
    let mut found = Vec::new();
    walk(root, root, &mut found);
    found.sort_by(|a, b| a.relative.cmp(&b.relative));
    found
}

fn walk(root: &Path, dir: &Path, found: &mut Vec<SourceFile>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("reading {}: {error}", dir.display()))
        .map(|entry| entry.expect("a folder entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(root, &path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let relative = path
                .strip_prefix(root)
                .expect("beneath src")
                .components()
                .map(|part| part.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|error| panic!("reading {}: {error}", path.display()));
            found.push(parse(&relative, &text));
        }
    }
}

/// Parses one file; `relative` is its path below `src/`.
pub fn parse(relative: &str, text: &str) -> SourceFile {
    let syntax = syn::parse_file(text)
        .unwrap_or_else(|error| panic!("src/{relative} does not parse: {error}"));
    let module = module_of(relative);
    let parts: Vec<&str> = relative.split('/').collect();
    let (folders, file_name) = parts.split_at(parts.len() - 1);
    let is_test = folders.iter().any(|f| *f == "tests" || *f == "fakes")
        || matches!(file_name[0], "tests.rs" | "fakes.rs");
    let mut reader = Reader {
        module: module.clone(),
        in_test: is_test,
        self_type: None,
        functions: Vec::new(),
        parent_globs: Vec::new(),
        paths: Vec::new(),
    };
    reader.visit_file(&syntax);
    SourceFile {
        relative: relative.to_string(),
        line_count: text.lines().count(),
        is_test,
        summary: summary(text),
        functions: reader.functions,
        parent_globs: reader.parent_globs,
        paths: reader.paths,
        module,
    }
}

fn module_of(relative: &str) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    match parts.last().map(String::as_str) {
        Some("mod") | Some("lib") => {
            parts.pop();
        }
        _ => {}
    }
    parts
}

/// The file's first `//!` sentence, joined across its lines.
fn summary(text: &str) -> String {
    let doc: Vec<&str> = text
        .lines()
        .take_while(|line| line.starts_with("//!"))
        .map(|line| line.trim_start_matches("//!").trim())
        .take_while(|line| !line.is_empty())
        .collect();
    let joined = doc.join(" ");
    match first_sentence_end(&joined) {
        Some(end) => joined[..end].to_string(),
        None => joined,
    }
}

/// Where the first sentence ends: a full stop followed by a space and a capital, outside
/// backticks and brackets (`e.g.` and `mod.rs` are not ends).
fn first_sentence_end(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut in_code = false;
    let mut depth = 0i32;
    for (i, &byte) in bytes.iter().enumerate() {
        match byte {
            b'`' => in_code = !in_code,
            b'(' if !in_code => depth += 1,
            b')' if !in_code => depth -= 1,
            b'.' if !in_code && depth == 0 => {
                let next_is_end = bytes.get(i + 1).is_none_or(|b| *b == b' ')
                    && bytes
                        .get(i + 2)
                        .is_none_or(|b| b.is_ascii_uppercase() || *b == b'`');
                if next_is_end && !text[..i].ends_with("e.g") && !text[..i].ends_with("i.e") {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

struct Reader {
    /// The module the reader is in: the file's, and any inline `mod` around it.
    module: Vec<String>,
    in_test: bool,
    self_type: Option<String>,
    functions: Vec<Function>,
    parent_globs: Vec<usize>,
    paths: Vec<Vec<String>>,
}

fn is_test_code(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        let path = attr.path();
        if path.is_ident("test") {
            return true;
        }
        if path.segments.last().is_some_and(|s| s.ident == "test") {
            return true; // #[tokio::test]
        }
        if path.is_ident("cfg") {
            let tokens = attr.meta.to_token_stream().to_string();
            return tokens
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .any(|w| w == "test")
                && !tokens.contains("not");
        }
        false
    })
}

impl Reader {
    fn function(&mut self, name: &syn::Ident, sig: &syn::Signature, block: &syn::Block) {
        let first = sig.fn_token.span.start().line;
        let last = block.brace_token.span.close().end().line;
        let name = match &self.self_type {
            Some(owner) => format!("{owner}::{name}"),
            None => name.to_string(),
        };
        self.functions.push(Function {
            name,
            line: first,
            lines: last + 1 - first,
        });
    }

    fn in_child<F: FnOnce(&mut Self)>(&mut self, test: bool, f: F) {
        let was = self.in_test;
        self.in_test |= test;
        f(self);
        self.in_test = was;
    }

    /// Records a path that starts at one of our modules, made absolute.
    fn record(&mut self, segments: &[String]) {
        let Some(first) = segments.first() else {
            return;
        };
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" | "super" => self.module.clone(),
            _ => return,
        };
        let mut rest = &segments[1..];
        if first == "super" {
            base.pop();
        }
        while rest.first().is_some_and(|s| s == "super") {
            base.pop();
            rest = &rest[1..];
        }
        base.extend(rest.iter().cloned());
        self.paths.push(base);
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(path) => {
                prefix.push(path.ident.to_string());
                self.use_tree(prefix, &path.tree);
                prefix.pop();
            }
            syn::UseTree::Name(name) => {
                prefix.push(name.ident.to_string());
                self.record(&prefix.clone());
                prefix.pop();
            }
            syn::UseTree::Rename(rename) => {
                prefix.push(rename.ident.to_string());
                self.record(&prefix.clone());
                prefix.pop();
            }
            syn::UseTree::Glob(glob) => {
                let ours = prefix
                    .first()
                    .is_some_and(|first| first == "super" || first == "crate");
                if ours && !self.in_test {
                    self.parent_globs.push(glob.star_token.span().start().line);
                }
                self.record(&prefix.clone());
            }
            syn::UseTree::Group(group) => {
                for item in &group.items {
                    self.use_tree(prefix, item);
                }
            }
        }
    }

    /// Paths inside a macro's tokens (`tracing::info!(…)`, `format!`, `matches!`), which
    /// `syn` leaves unparsed: `crate::a::b`, `super::c` read as a sequence of tokens.
    fn macro_tokens(&mut self, tokens: proc_macro2::TokenStream) {
        let mut current: Vec<String> = Vec::new();
        let mut after_colons = false;
        let mut pending_colon = false;
        for token in tokens {
            match token {
                proc_macro2::TokenTree::Group(group) => {
                    self.flush(&mut current);
                    self.macro_tokens(group.stream());
                    after_colons = false;
                    pending_colon = false;
                }
                proc_macro2::TokenTree::Ident(ident) => {
                    let word = ident.to_string();
                    if after_colons && !current.is_empty() {
                        current.push(word);
                    } else {
                        self.flush(&mut current);
                        if matches!(word.as_str(), "crate" | "super" | "self") {
                            current.push(word);
                        }
                    }
                    after_colons = false;
                    pending_colon = false;
                }
                proc_macro2::TokenTree::Punct(punct) if punct.as_char() == ':' => {
                    if pending_colon {
                        after_colons = true;
                        pending_colon = false;
                    } else {
                        pending_colon = true;
                    }
                }
                _ => {
                    self.flush(&mut current);
                    after_colons = false;
                    pending_colon = false;
                }
            }
        }
        self.flush(&mut current);
    }

    fn flush(&mut self, current: &mut Vec<String>) {
        if current.len() > 1 {
            let path = std::mem::take(current);
            self.record(&path);
        }
        current.clear();
    }
}

impl<'ast> Visit<'ast> for Reader {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        let test = is_test_code(&item.attrs);
        self.module.push(item.ident.to_string());
        self.in_child(test, |reader| visit::visit_item_mod(reader, item));
        self.module.pop();
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        let test = is_test_code(&item.attrs);
        if !self.in_test && !test {
            let owner = self.self_type.take();
            self.function(&item.sig.ident, &item.sig, &item.block);
            self.self_type = owner;
        }
        self.in_child(test, |reader| visit::visit_item_fn(reader, item));
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        let test = is_test_code(&item.attrs);
        let owner = match &*item.self_ty {
            syn::Type::Path(path) => path.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        };
        let was = std::mem::replace(&mut self.self_type, owner);
        self.in_child(test, |reader| visit::visit_item_impl(reader, item));
        self.self_type = was;
    }

    fn visit_item_trait(&mut self, item: &'ast syn::ItemTrait) {
        let was = self.self_type.replace(item.ident.to_string());
        visit::visit_item_trait(self, item);
        self.self_type = was;
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        let test = is_test_code(&item.attrs);
        if !self.in_test && !test {
            self.function(&item.sig.ident, &item.sig, &item.block);
        }
        self.in_child(test, |reader| visit::visit_impl_item_fn(reader, item));
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if let Some(block) = &item.default
            && !self.in_test
        {
            self.function(&item.sig.ident, &item.sig, block);
        }
        visit::visit_trait_item_fn(self, item);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let test = is_test_code(&item.attrs);
        self.in_child(test, |reader| reader.use_tree(&mut Vec::new(), &item.tree));
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        self.record(&segments);
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.macro_tokens(mac.tokens.clone());
        visit::visit_macro(self, mac);
    }
}
