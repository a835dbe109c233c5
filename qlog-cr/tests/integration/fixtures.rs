//! The checked-in traces under tests/data are exactly what the model writes.

use std::path::PathBuf;

use crate::support;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// Compares a generated trace with its fixture; with QLOG_CR_BLESS=1 set,
/// rewrites the fixture instead.
fn check_fixture(name: &str, generated: &[u8]) {
    let path = data(name);
    if std::env::var_os("QLOG_CR_BLESS").is_some() {
        std::fs::write(&path, generated).expect("write fixture");
    }
    let stored = std::fs::read(&path).expect("read fixture");
    assert!(
        stored == generated,
        "{name} differs from the model's output; rerun with QLOG_CR_BLESS=1"
    );
}

#[test]
fn fixtures_match_the_model() {
    check_fixture("plain.sqlog", &support::model::run(support::plain()));
    check_fixture(
        "cr-every-phase.sqlog",
        &support::model::run(support::every_phase()),
    );
    check_fixture(
        "cr-safe-retreat.sqlog",
        &support::model::run(support::safe_retreat()),
    );
}
