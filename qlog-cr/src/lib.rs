//! qlog-cr (work in progress).
