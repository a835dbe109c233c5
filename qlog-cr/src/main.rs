//! The `qlog-cr` command-line tool (being written).

fn main() {}
