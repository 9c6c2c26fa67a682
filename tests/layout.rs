//! The shape `docs/architecture.md` promises, read with a real Rust parser (`syn`), so no
//! string, comment or macro can fool it: no production function over 80 lines, no source
//! file over 800, no `use super::*` outside tests, no import cycle between the top-level
//! modules of `src/` or between its files, and each top-level module importing only the
//! modules its layer allows. The module map in `docs/architecture.md` is kept true here
//! too: every file under `src/` has its row, and no row names a file that is gone.
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
