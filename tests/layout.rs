//! The shape `docs/architecture.md` promises, read with a real Rust parser (`syn`), so no
//! string, comment or macro can fool it: no production function over 80 lines, no source
//! file over 800, no `use super::*` outside tests, no import cycle between the top-level
//! modules of `src/` or between its files, and each top-level module importing only the
//! modules its layer allows. The module map in `docs/architecture.md` is kept true here
//! too: every file under `src/` has its row, and no row names a file that is gone; and every
//! file of ours a doc names in backticks exists.
//!
//! `cargo test --test layout` runs it; `SIDEKICKS_BLESS=1 cargo test --test layout`
//! rewrites the generated parts of `docs/architecture.md` (the module map and the measured
//! sizes) from the code, for a change that adds, moves or describes a file.

#[path = "layout/source.rs"]
mod source;

#[path = "layout/imports.rs"]
mod imports;

#[path = "layout/map.rs"]
mod map;

use source::{Function, SourceFile};

/// No production function is longer: a longer one does several jobs, and reads as one
/// only to its author.
const MAX_FUNCTION_LINES: usize = 80;
/// No source file is longer: split a longer one by job, not trimmed to the limit.
const MAX_FILE_LINES: usize = 800;

fn sources() -> Vec<SourceFile> {
    source::read_tree(&source::src_dir())
}

#[test]
fn no_production_function_is_over_80_lines() {
    let long: Vec<String> = sources()
        .iter()
        .filter(|file| !file.is_test)
        .flat_map(|file| {
            file.functions
                .iter()
                .filter(|function| function.lines > MAX_FUNCTION_LINES)
                .map(move |function| describe(file, function))
        })
        .collect();
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines (split each by job):\n{}",
        long.join("\n")
    );
}

fn describe(file: &SourceFile, function: &Function) -> String {
    format!(
        "  src/{}:{} fn {} has {} lines",
        file.relative, function.line, function.name, function.lines
    )
}

#[test]
fn no_source_file_is_over_800_lines() {
    let long: Vec<String> = sources()
        .iter()
        .filter(|file| file.line_count > MAX_FILE_LINES)
        .map(|file| format!("  src/{} has {} lines", file.relative, file.line_count))
        .collect();
    assert!(
        long.is_empty(),
        "source files over {MAX_FILE_LINES} lines (split each by job):\n{}",
        long.join("\n")
    );
}

#[test]
fn production_code_imports_what_it_uses_by_name() {
    let globs: Vec<String> = sources()
        .iter()
        .filter(|file| !file.is_test)
        .flat_map(|file| {
            file.parent_globs
                .iter()
                .map(move |line| format!("  src/{}:{line}", file.relative))
        })
        .collect();
    assert!(
        globs.is_empty(),
        "`use super::*` (or a glob of another module of ours) outside a test module; \
         import each item by name, so no part reaches another's private items unseen:\n{}",
        globs.join("\n")
    );
}

#[test]
fn no_import_cycle_between_top_level_modules_or_files() {
    let files = sources();
    let cycles = imports::cycles(&files);
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn each_layer_imports_only_the_layers_beneath_it() {
    let files = sources();
    let strays = imports::layer_violations(&files);
    assert!(
        strays.is_empty(),
        "imports the layer table in tests/layout/imports.rs (and docs/architecture.md) \
         does not allow:\n{}",
        strays.join("\n")
    );
}

#[test]
fn the_module_map_names_every_file_and_only_files_that_exist() {
    map::check_or_bless(&sources());
}

#[test]
fn the_checker_sees_through_strings_comments_and_test_modules() {
    let text = r##"
//! A file.
use super::*;
pub fn short() {
    let url = "http://example.org/ { not a brace";
    let raw = r#"}}}"#;
    // a comment with a } brace
}
pub fn long() {
    let a = 1;
    let b = 2;
    let c = 3;
}
#[cfg(test)]
mod tests {
    use super::*;
    fn helper() {
        let x = 1;
        let y = 2;
    }
}
"##;
    let file = source::parse("example.rs", text);
    let names: Vec<(&str, usize)> = file
        .functions
        .iter()
        .map(|function| (function.name.as_str(), function.lines))
        .collect();
    assert_eq!(names, vec![("short", 5), ("long", 5)]);
    assert_eq!(file.parent_globs, vec![3]);
}

/// The docs name files of the code in backticks (`core/channel/turn.rs`,
/// `acp/connection/`, `tests/streaming.rs`): each must exist, below `src/` or the
/// repository's root, so a file moved or split does not leave a doc pointing at nothing.
/// A path is written whole, from `src/` or the root, never relative to another file.
/// `docs/performance-history.md` is the archive: it says what was true then.
#[test]
fn every_file_the_docs_name_exists() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = Vec::new();
    let mut docs: Vec<std::path::PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .filter(|path| !path.ends_with("performance-history.md"))
        .collect();
    docs.push(root.join("README.md"));
    for doc in docs {
        let text = std::fs::read_to_string(&doc).unwrap();
        for path in named_code_paths(&text) {
            let places = [root.join("src"), root.to_path_buf()];
            // A folder is ours when its first part is (`core/view/`, `tests/`); others
            // (`sidekicks-inbox/`, `ssh/`) are what the gateway makes at run time.
            let first = path.split('/').next().unwrap_or_default();
            if path.ends_with('/') && !places.iter().any(|p| p.join(first).is_dir()) {
                continue;
            }
            let found = places.iter().any(|p| p.join(&path).exists());
            if !found {
                missing.push(format!("{}: `{path}`", doc.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "the docs name files that do not exist:\n  {}",
        missing.join("\n  ")
    );
}

/// The backticked words of `text` that look like a path of ours: a `.rs` file, or a folder
/// (`…/`), made of lowercase names.
fn named_code_paths(text: &str) -> Vec<String> {
    let name = |part: &str| {
        !part.is_empty()
            && (part.chars()).all(|c| {
                c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-' || c == '.'
            })
    };
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|word| word.contains('/') && (word.ends_with(".rs") || word.ends_with('/')))
        .filter(|word| !word.starts_with('/') && !word.contains("..") && !word.contains("://"))
        .filter(|word| word.trim_end_matches('/').split('/').all(name))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_docs_check_reads_paths_in_backticks_only() {
    let text = "see `core/channel/turn.rs` and `acp/connection/`, not `a b.rs`, \
                `/etc/x/`, `https://x/y/`, `Foo/bar.rs`, or core/plain.rs";
    assert_eq!(
        named_code_paths(text),
        vec!["core/channel/turn.rs", "acp/connection/"]
    );
}
