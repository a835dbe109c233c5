//! The files of each crate import one another without circles: when module
//! `a` uses `crate::b`, `b` does not use `crate::a`, directly or through
//! others, so each module's opening comment can say what it owns and what
//! it builds on. (Cargo already refuses circles between crates.)
//!
//! The graph is read from the source text: every `crate::<module>` path
//! outside `#[cfg(test)]` code is an edge to the deepest module of that path
//! that is a file of the crate. A parent declaring its children (`mod x;`)
//! is not an edge.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The workspace's library and program crates with modules of their own.
const CRATES: &[&str] = &[
    "careful-resume",
    "ex-token",
    "qlog-cr",
    "endpoint",
    "serve",
    "sim",
    "apps",
    "guard-redis",
    "tokio-cr",
];

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable source folder") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The module path of a file relative to `src/` (`a/b.rs` and `a/b/mod.rs`
/// are `a::b`; `lib.rs`, `main.rs` and `bin/*` are roots and left out).
fn module_of(relative: &Path) -> Option<String> {
    let mut parts: Vec<String> = relative
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.first().is_some_and(|p| p == "bin") || parts == ["lib"] || parts == ["main"] {
        return None;
    }
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    Some(parts.join("::"))
}

/// The modules a file's non-test code names through `crate::` paths.
fn imports(text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let path: String = code[at + "crate::".len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        let parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
        if let Some(module) = (1..=parts.len())
            .rev()
            .map(|n| parts[..n].join("::"))
            .find(|candidate| modules.contains(candidate))
        {
            found.insert(module);
        }
    }
    found
}

/// A circle through `start`, if the graph has one.
fn circle_through(start: &str, edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    let mut stack = vec![vec![start.to_string()]];
    let mut seen = BTreeSet::new();
    while let Some(path) = stack.pop() {
        let last = path.last().expect("paths are never empty");
        for next in edges.get(last).into_iter().flatten() {
            if next == start {
                let mut circle = path.clone();
                circle.push(start.to_string());
                return Some(circle);
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push(longer);
            }
        }
    }
    None
}

/// The import graph of the crate in `crate_dir`.
fn graph(crate_dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let src = crate_dir.join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let named: Vec<(String, PathBuf)> = files
        .into_iter()
        .filter_map(|f| Some((module_of(f.strip_prefix(&src).ok()?)?, f)))
        .collect();
    let modules: BTreeSet<String> = named.iter().map(|(m, _)| m.clone()).collect();
    named
        .iter()
        .map(|(module, file)| {
            let text = fs::read_to_string(file).expect("readable source");
            let mut uses = imports(&text, &modules);
            uses.retain(|m| m != module && !m.starts_with(&format!("{module}::")));
            (module.clone(), uses)
        })
        .collect()
}

#[test]
fn no_crate_has_an_import_circle() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut circles = Vec::new();
    for name in CRATES {
        let edges = graph(&workspace.join(name));
        assert!(!edges.is_empty(), "{name}: no modules found");
        for module in edges.keys() {
            if let Some(circle) = circle_through(module, &edges) {
                circles.push(format!("{name}: {}", circle.join(" -> ")));
            }
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_reader_finds_a_circle_and_the_modules_a_path_names() {
    let modules: BTreeSet<String> = ["link", "units", "app", "app::h3"].map(String::from).into();
    let uses = imports(
        "use crate::units::Rate;\nuse crate::app::h3::Client;\n#[cfg(test)]\nuse crate::link;",
        &modules,
    );
    assert_eq!(uses, ["app::h3", "units"].map(String::from).into());
    let edges: BTreeMap<String, BTreeSet<String>> = [
        ("link", vec!["units"]),
        ("units", vec!["link"]),
        ("app", vec![]),
    ]
    .into_iter()
    .map(|(m, to)| (m.to_string(), to.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(
        circle_through("link", &edges),
        Some(["link", "units", "link"].map(String::from).to_vec())
    );
    assert_eq!(circle_through("app", &edges), None);
}
