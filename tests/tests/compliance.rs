//! The compliance matrix (`careful-resume/COMPLIANCE.md`) cannot go stale:
//! every test it names in backticks must be defined as a function somewhere
//! in the workspace (a `.rs` file outside `target/` and `quiche/patched/`)
//! or in one of our quiche patches, it must name at least 30 of them, and
//! every row's status must be one the matrix defines.
//!
//! And every `met` row of the RFC 9959 tables names its through-quiche
//! proof: exactly one test, first in its Tests column as `quiche: `name``,
//! defined where tests drive the patched quiche (`tests/tests/`,
//! `sim/tests/`, `sim/src/`, `apps/tests/` or a patch of `quiche/patches/`)
//! and nowhere in `careful-resume/` or `ex-token/`; unless its status reads
//! `met (no quiche behaviour: why)`, which names no such test.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The fewest tests the matrix may name.
const MIN_TESTS: usize = 30;
/// The words a status may start with.
const STATUSES: [&str; 5] = ["met", "partly", "deviates", "not applicable", "missing"];
/// The heading of the matrix's section whose `met` rows each name a
/// through-quiche proof.
const RFC_SECTION: &str = "RFC 9959";
/// How a Tests cell marks its through-quiche proof.
const QUICHE_MARK: &str = "quiche: `";
/// How a `met` row that states no quiche behaviour says so, and why.
const NO_QUICHE_BEHAVIOUR: &str = "met (no quiche behaviour: ";
/// Where tests that drive the patched quiche live (paths from the
/// workspace root, `/`-separated).
const THROUGH_QUICHE: [&str; 5] = [
    "tests/tests/",
    "sim/tests/",
    "sim/src/",
    "apps/tests/",
    "quiche/patches/",
];
/// Crates with no quiche in them: a test they define proves nothing about
/// quiche, and a name they share with a through-quiche test is ambiguous.
const WITHOUT_QUICHE: [&str; 2] = ["careful-resume/", "ex-token/"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace holds the tests crate")
        .to_path_buf()
}

/// One row of a matrix table: where it is (its line, and the `## `
/// heading it is under), its status, the identifiers in backticks of its
/// tests column, and that column's text.
struct Row {
    line: usize,
    section: String,
    status: String,
    tests: Vec<String>,
    tests_cell: String,
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
    let mut section = String::new();
    // (status column, tests column) of the table being read.
    let mut columns: Option<(usize, usize)> = None;
    for (index, line) in matrix.lines().enumerate() {
        if let Some(heading) = line.strip_prefix("## ") {
            section = heading.trim().to_owned();
        }
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
        let tests_cell = cells.get(tests).copied().unwrap_or_default();
        rows.push(Row {
            line: index + 1,
            section: section.clone(),
            status: cells.get(status).copied().unwrap_or_default().to_owned(),
            tests: backticked(tests_cell),
            tests_cell: tests_cell.to_owned(),
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

/// Each function name, with the files (from the workspace root,
/// `/`-separated) that define it.
type Definitions = BTreeMap<String, BTreeSet<String>>;

/// Records the functions `text`, the file at `path`, defines.
fn define(root: &Path, path: &Path, text: &str, defined: &mut Definitions) {
    let file = path
        .strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    let mut names = BTreeSet::new();
    functions_in(text, &mut names);
    for name in names {
        defined.entry(name).or_default().insert(file.clone());
    }
}

/// Functions defined in the workspace's `.rs` files under `dir`, skipping
/// build output, the materialised fork and hidden directories.
fn rust_functions(root: &Path, dir: &Path, names: &mut Definitions) {
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
            define(root, &path, &text, names);
        }
    }
}

/// Functions our quiche patches define (lines they keep or add; not the
/// ones they remove).
fn patch_functions(root: &Path, names: &mut Definitions) {
    let dir = root.join("quiche").join("patches");
    let entries = fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "patch") {
            let text =
                fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let kept: Vec<&str> = text.lines().filter(|l| !l.starts_with('-')).collect();
            define(root, &path, &kept.join("\n"), names);
        }
    }
}

/// The test a Tests cell names as its through-quiche proof, if it names
/// one first; and how many it names in all.
fn quiche_proof(tests_cell: &str) -> (Option<String>, usize) {
    let count = tests_cell.matches(QUICHE_MARK).count();
    let first = tests_cell
        .strip_prefix(QUICHE_MARK)
        .and_then(|rest| rest.split('`').next())
        .map(str::to_owned);
    (first, count)
}

/// Whether a test defined in `file` drives the patched quiche.
fn is_through_quiche(file: &str) -> bool {
    THROUGH_QUICHE.iter().any(|dir| file.starts_with(dir))
}

/// Where `rows` break the rule of through-quiche proofs: every `met` row
/// of the RFC 9959 section names exactly one `quiche:` test, first, defined
/// in a through-quiche location and in no crate without quiche, unless its
/// status says it states no quiche behaviour (then it names none). A
/// `quiche:` test of any other row must meet the same conditions.
fn quiche_proof_problems(rows: &[Row], defined: &Definitions) -> Vec<String> {
    let mut problems = Vec::new();
    for row in rows {
        let (proof, count) = quiche_proof(&row.tests_cell);
        let line = row.line;
        let exempt = row.status.starts_with(NO_QUICHE_BEHAVIOUR);
        let bound = row.section == RFC_SECTION && row.status.starts_with("met");
        if exempt && count > 0 {
            problems.push(format!(
                "line {line}: states no quiche behaviour yet names a `quiche:` test"
            ));
            continue;
        }
        if count > 1 {
            problems.push(format!(
                "line {line}: names {count} `quiche:` tests; a row names one"
            ));
        }
        if count > 0 && proof.is_none() {
            problems.push(format!(
                "line {line}: its `quiche:` test is not the first entry of its Tests column"
            ));
        }
        if bound && !exempt && count == 0 {
            problems.push(format!(
                "line {line}: a met row of {RFC_SECTION} names no `quiche:` test (or says \
                 `{NO_QUICHE_BEHAVIOUR}...)`)"
            ));
        }
        let Some(name) = proof else { continue };
        let files = defined.get(&name).cloned().unwrap_or_default();
        let without: Vec<&String> = files
            .iter()
            .filter(|f| WITHOUT_QUICHE.iter().any(|dir| f.starts_with(dir)))
            .collect();
        if !without.is_empty() {
            problems.push(format!(
                "line {line}: `quiche:` test `{name}` is defined in {without:?}, where no test \
                 drives quiche"
            ));
        } else if !files.iter().any(|f| is_through_quiche(f)) {
            problems.push(format!(
                "line {line}: `quiche:` test `{name}` is defined in none of {THROUGH_QUICHE:?} \
                 (but in {files:?})"
            ));
        }
    }
    problems
}

#[test]
fn every_test_the_compliance_matrix_names_exists() {
    let root = workspace();
    let matrix_path = root.join("careful-resume").join("COMPLIANCE.md");
    let matrix = fs::read_to_string(&matrix_path)
        .unwrap_or_else(|e| panic!("{}: {e}", matrix_path.display()));
    let rows = rows(&matrix);

    let mut defined = Definitions::new();
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
        if is_identifier(name) && !defined.contains_key(name) {
            problems.push(format!(
                "`{name}` (line {lines:?}) is defined nowhere in the workspace or quiche/patches"
            ));
        }
    }
    problems.extend(quiche_proof_problems(&rows, &defined));
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

#[test]
fn the_checker_wants_one_through_quiche_proof_for_each_met_rfc_row() {
    let matrix = "\
## RFC 9959\n\
\n\
| # | Status | Tests |\n\
|---|---|---|\n\
| R1 | met: fine | quiche: `in_tests`, `in_crate` |\n\
| R2 | met | `in_tests` |\n\
| R3 | met | quiche: `in_crate` |\n\
| R4 | met | quiche: `in_tests`, quiche: `in_sim` |\n\
| R5 | met | `in_crate`, quiche: `in_sim` |\n\
| R6 | met (no quiche behaviour: a format) | `in_crate` |\n\
| R7 | met (no quiche behaviour: a format) | quiche: `in_patch` |\n\
| R8 | partly: no test drives quiche | `in_crate` |\n\
| R9 | met | quiche: `in_patch` |\n\
| R10 | met | quiche: `in_both` |\n\
| R11 | met | quiche: `in_guard` |\n\
| R12 | met | quiche: `in_apps` |\n\
\n\
## the draft\n\
\n\
| # | Status | Tests |\n\
|---|---|---|\n\
| X1 | met | `in_crate` |\n";
    let defined: Definitions = [
        ("in_tests", "tests/tests/triggers.rs"),
        ("in_sim", "sim/tests/pacing.rs"),
        ("in_patch", "quiche/patches/0004-recovery.patch"),
        ("in_apps", "apps/tests/fleet.rs"),
        ("in_crate", "careful-resume/tests/resume.rs"),
        ("in_both", "ex-token/src/guard.rs"),
        ("in_both", "tests/tests/saved_sets.rs"),
        ("in_guard", "guard-redis/tests/guard.rs"),
    ]
    .into_iter()
    .fold(Definitions::new(), |mut defined, (name, file)| {
        defined
            .entry(name.to_owned())
            .or_default()
            .insert(file.to_owned());
        defined
    });
    let rows = rows(matrix);
    assert_eq!(rows[0].section, RFC_SECTION);
    assert_eq!(rows.last().map(|r| r.section.as_str()), Some("the draft"));
    assert_eq!(
        quiche_proof(&rows[0].tests_cell),
        (Some("in_tests".to_owned()), 1)
    );

    // The rows the checker refuses, by their number.
    let problems = quiche_proof_problems(&rows, &defined);
    let refused: BTreeSet<String> = problems
        .iter()
        .map(|p| {
            let line: usize = p
                .trim_start_matches("line ")
                .split(':')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{p}"));
            rows.iter()
                .find(|r| r.line == line)
                .map(|r| cells(matrix.lines().nth(r.line - 1).unwrap())[0].to_owned())
                .unwrap_or_else(|| panic!("{p}"))
        })
        .collect();
    let expected: BTreeSet<String> = ["R2", "R3", "R4", "R5", "R7", "R10", "R11"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(refused, expected, "{problems:#?}");
}
