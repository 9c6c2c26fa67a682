//! Who imports whom: the graph of files and of top-level modules, its cycles, and the
//! layers each top-level module may import (an allowlist: a new import across layers is
//! a decision, written here and in `docs/architecture.md`, not an accident).

use std::collections::{BTreeMap, BTreeSet};

use super::source::SourceFile;

/// Each top-level module of `src/` and the top-level modules it imports, in layers: a
/// module imports only rows above its own. `model` (the shared data) imports nothing of
/// ours; `remote` (the SSH helper's wire), `workspace` (folders) and the pure `render` and
/// `store` build on it; `core` decides; the adapters (`mcp`, `acp`, `matrix`) carry;
/// `config` reads the file and names what it configures; `app` wires them all.
pub const LAYERS: &[(&str, &[&str])] = &[
    ("model", &[]),
    ("state_dir", &[]),
    ("http_server", &[]),
    ("remote", &["model", "state_dir"]),
    ("workspace", &["model", "remote"]),
    ("render", &["model", "workspace"]),
    ("store", &["model"]),
    ("core", &["model", "render", "store", "workspace"]),
    ("mcp", &["model", "core", "http_server", "workspace"]),
    ("acp", &["model", "core", "mcp", "remote", "workspace"]),
    ("transcribe", &["model", "core"]),
    (
        "config",
        &[
            "model",
            "acp",
            "core",
            "mcp",
            "render",
            "store",
            "workspace",
        ],
    ),
    ("matrix", &["model", "config", "core", "state_dir", "store"]),
    (
        "app",
        &[
            "model",
            "acp",
            "config",
            "core",
            "http_server",
            "matrix",
            "mcp",
            "remote",
            "render",
            "state_dir",
            "store",
            "transcribe",
            "workspace",
        ],
    ),
];

/// The file module a path lands in: its longest prefix that is a file of ours.
fn resolve<'a>(
    files: &'a BTreeMap<Vec<String>, &'a SourceFile>,
    path: &[String],
) -> Option<&'a SourceFile> {
    (1..=path.len())
        .rev()
        .find_map(|len| files.get(&path[..len]).copied())
}

/// Every file's imports of other files (the binary's `main.rs` left out: it is not in the
/// library's tree).
fn file_edges(files: &[SourceFile]) -> BTreeMap<String, BTreeSet<String>> {
    let by_module: BTreeMap<Vec<String>, &SourceFile> = files
        .iter()
        .filter(|file| file.relative != "main.rs")
        .map(|file| (file.module.clone(), file))
        .collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in by_module.values() {
        let targets = edges.entry(file.relative.clone()).or_default();
        for path in &file.paths {
            if let Some(target) = resolve(&by_module, path)
                && target.relative != file.relative
            {
                targets.insert(target.relative.clone());
            }
        }
    }
    edges
}

fn top(relative: &str) -> &str {
    let first = relative.split('/').next().unwrap_or(relative);
    first.trim_end_matches(".rs")
}

/// A top-level module's imports of the others, with one file that makes each.
pub fn top_level_edges(files: &[SourceFile]) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut top_edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (from, targets) in file_edges(files) {
        for to in targets {
            if top(&from) != top(&to) && top(&from) != "lib" && top(&to) != "lib" {
                top_edges
                    .entry(top(&from).to_string())
                    .or_default()
                    .entry(top(&to).to_string())
                    .or_insert_with(|| from.clone());
            }
        }
    }
    top_edges
}

pub fn cycles(files: &[SourceFile]) -> Vec<String> {
    let mut found = Vec::new();
    let top_graph: BTreeMap<String, BTreeSet<String>> = top_level_edges(files)
        .into_iter()
        .map(|(from, to)| (from, to.into_keys().collect()))
        .collect();
    for cycle in strongly_connected(&top_graph) {
        found.push(format!("  top-level modules: {}", cycle.join(" <-> ")));
    }
    // A parent module declares and re-exports its children: those edges are not imports.
    let file_graph: BTreeMap<String, BTreeSet<String>> = file_edges(files)
        .into_iter()
        .map(|(from, to)| {
            let folder = folder_of(&from);
            let kept = to
                .into_iter()
                .filter(|target| folder.as_ref().is_none_or(|f| !target.starts_with(f)))
                .collect();
            (from, kept)
        })
        .collect();
    for cycle in strongly_connected(&file_graph) {
        found.push(format!("  files: {}", cycle.join(" <-> ")));
    }
    found
}

/// The folder a `mod.rs` or `lib.rs` declares (`core/channel/`), or none.
fn folder_of(relative: &str) -> Option<String> {
    if relative == "lib.rs" {
        return Some(String::new());
    }
    relative.strip_suffix("mod.rs").map(str::to_string)
}

pub fn layer_violations(files: &[SourceFile]) -> Vec<String> {
    let allowed: BTreeMap<&str, &[&str]> = LAYERS.iter().copied().collect();
    let mut strays = Vec::new();
    let modules: BTreeSet<&str> = files
        .iter()
        .map(|file| top(&file.relative))
        .filter(|module| !matches!(*module, "lib" | "main"))
        .collect();
    for module in modules {
        if !allowed.contains_key(module) {
            strays.push(format!(
                "  `{module}` has no row in LAYERS: say what it may import"
            ));
        }
    }
    let edges = top_level_edges(files);
    for (from, targets) in &edges {
        let may = allowed.get(from.as_str()).copied().unwrap_or(&[]);
        for (to, by) in targets {
            if !may.contains(&to.as_str()) {
                strays.push(format!("  {from} imports {to} (src/{by})"));
            }
        }
    }
    // The table says what is true, not what once was: an allowed import no file makes
    // leaves it.
    for (from, may) in LAYERS {
        for to in *may {
            let used = edges
                .get(*from)
                .is_some_and(|targets| targets.contains_key(*to));
            if !used {
                strays.push(format!(
                    "  {from} may import {to} but no file does: remove it from LAYERS"
                ));
            }
        }
    }
    strays
}

/// Tarjan's strongly connected components of more than one node, each sorted.
fn strongly_connected(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    fn visit<'g>(state: &mut State<'g>, node: &'g str) {
        state.index.insert(node, state.next);
        state.low.insert(node, state.next);
        state.next += 1;
        state.stack.push(node);
        state.on_stack.insert(node);
        let graph = state.graph;
        for next in graph.get(node).into_iter().flatten() {
            let next = next.as_str();
            if !state.index.contains_key(next) {
                visit(state, next);
                let low = state.low[node].min(state.low[next]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(next) {
                let low = state.low[node].min(state.index[next]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            while let Some(top) = state.stack.pop() {
                state.on_stack.remove(top);
                component.push(top.to_string());
                if top == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                state.found.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !state.index.contains_key(node.as_str()) {
            visit(&mut state, node);
        }
    }
    state.found
}
