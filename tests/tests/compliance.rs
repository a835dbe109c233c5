//! The compliance matrix (`careful-resume/COMPLIANCE.md`) cannot go stale:
//! every test it names in backticks must be defined as a function somewhere
//! in the workspace (a `.rs` file outside `target/` and `quiche/patched/`)
//! or in one of our quiche patches, it must name at least 30 of them, and
//! every row's status must be one the matrix defines.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The fewest tests the matrix may name.
const MIN_TESTS: usize = 30;
/// The words a status may start with.
const STATUSES: [&str; 5] = ["met", "partly", "deviates", "not applicable", "missing"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace holds the tests crate")
        .to_path_buf()
}

/// One row of a matrix table: where it is, its status and the identifiers
/// in backticks of its tests column.
struct Row {
    line: usize,
    status: String,
    tests: Vec<String>,
}

fn cells(line: &str) -> Vec<&str> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(str::trim).collect()
}

fn is_separator(cells: &[&str]) -> bool {
    cells
        .iter()
        .all(|c| !c.is_empty() && c.chars().all(|ch| ch == '-' || ch == ':'))
}

/// The text between each pair of backticks in `cell`.
fn backticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The rows of every table of `matrix` that has a "Tests" and a "Status"
/// column.
fn rows(matrix: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    // (status column, tests column) of the table being read.
    let mut columns: Option<(usize, usize)> = None;
    for (index, line) in matrix.lines().enumerate() {
        if !line.trim_start().starts_with('|') {
            columns = None;
            continue;
        }
        let cells = cells(line);
        if is_separator(&cells) {
            continue;
        }
        let Some((status, tests)) = columns else {
            let position = |name: &str| cells.iter().position(|c| *c == name);
            columns = position("Status").zip(position("Tests"));
            continue;
        };
        rows.push(Row {
            line: index + 1,
            status: cells.get(status).copied().unwrap_or_default().to_owned(),
            tests: cells.get(tests).map_or_else(Vec::new, |c| backticked(c)),
        });
    }
    rows
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Every name that follows `fn ` in `text`.
fn functions_in(text: &str, names: &mut BTreeSet<String>) {
    for (at, _) in text.match_indices("fn ") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = text[at + 3..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            names.insert(name);
        }
    }
}

/// Functions defined in the workspace's `.rs` files under `dir`, skipping
/// build output, the materialised fork and hidden directories.
fn rust_functions(root: &Path, dir: &Path, names: &mut BTreeSet<String>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            let skipped = file_name.starts_with('.')
                || file_name == "target"
                || path == root.join("quiche").join("patched");
            if !skipped {
                rust_functions(root, &path, names);
            }
        } else if file_name.ends_with(".rs") {
            let text =
                fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            functions_in(&text, names);
        }
    }
}

/// Functions our quiche patches define (lines they keep or add; not the
/// ones they remove).
fn patch_functions(root: &Path, names: &mut BTreeSet<String>) {
    let dir = root.join("quiche").join("patches");
    let entries = fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "patch") {
            let text =
                fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let kept: Vec<&str> = text.lines().filter(|l| !l.starts_with('-')).collect();
            functions_in(&kept.join("\n"), names);
        }
    }
}

#[test]
fn every_test_the_compliance_matrix_names_exists() {
    let root = workspace();
    let matrix_path = root.join("careful-resume").join("COMPLIANCE.md");
    let matrix = fs::read_to_string(&matrix_path)
        .unwrap_or_else(|e| panic!("{}: {e}", matrix_path.display()));
    let rows = rows(&matrix);

    let mut defined = BTreeSet::new();
    rust_functions(&root, &root, &mut defined);
    patch_functions(&root, &mut defined);

    // Each named test, with the matrix lines that name it.
    let mut named: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut problems = Vec::new();
    for row in &rows {
        if !STATUSES.iter().any(|s| row.status.starts_with(s)) {
            problems.push(format!(
                "line {}: status {:?} is none of {STATUSES:?}",
                row.line, row.status
            ));
        }
        for name in &row.tests {
            if !is_identifier(name) {
                problems.push(format!(
                    "line {}: `{name}` is not a function name",
                    row.line
                ));
            }
            named.entry(name.clone()).or_default().push(row.line);
        }
    }
    for (name, lines) in &named {
        if is_identifier(name) && !defined.contains(name) {
            problems.push(format!(
                "`{name}` (line {lines:?}) is defined nowhere in the workspace or quiche/patches"
            ));
        }
    }
    if named.len() < MIN_TESTS {
        problems.push(format!(
            "the matrix names {} tests, fewer than {MIN_TESTS}",
            named.len()
        ));
    }

    let mut by_status: BTreeMap<&str, usize> = BTreeMap::new();
    for row in &rows {
        let status = STATUSES
            .iter()
            .find(|s| row.status.starts_with(*s))
            .copied()
            .unwrap_or("unknown");
        *by_status.entry(status).or_default() += 1;
    }
    eprintln!(
        "{} rows {by_status:?}, {} tests named",
        rows.len(),
        named.len()
    );
    assert!(
        problems.is_empty(),
        "{} in {}:\n{}",
        if problems.len() == 1 {
            "1 problem".to_owned()
        } else {
            format!("{} problems", problems.len())
        },
        matrix_path.display(),
        problems.join("\n")
    );
}

#[test]
fn the_matrix_reader_finds_rows_names_and_definitions() {
    let matrix = "\
intro with `not_a_test`\n\
\n\
| # | Status | Statement | Tests |\n\
|---|---|---|---|\n\
| R1 | met | a `quoted_trigger` | `first_test`, `second_test` |\n\
| R2 | partly: why | b | pending |\n\
\n\
| Tests | Status |\n\
|---|---|\n\
| `third_test` | missing |\n";
    let rows = rows(matrix);
    let found: Vec<(usize, &str, Vec<String>)> = rows
        .iter()
        .map(|r| (r.line, r.status.as_str(), r.tests.clone()))
        .collect();
    assert_eq!(
        found,
        [
            (
                5,
                "met",
                vec!["first_test".to_owned(), "second_test".to_owned()]
            ),
            (6, "partly: why", vec![]),
            (10, "missing", vec!["third_test".to_owned()]),
        ]
    );

    let mut names = BTreeSet::new();
    functions_in(
        "pub fn alpha() {}\n    async fn beta_2(x: u8) {}\nlet gn = 1; // notfn gamma\n+fn delta<T>()",
        &mut names,
    );
    let expected: BTreeSet<String> = ["alpha", "beta_2", "delta"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(names, expected);
    assert!(is_identifier("a_1") && !is_identifier("a::b") && !is_identifier("1a"));
}
