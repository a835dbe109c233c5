//! careful-resume (work in progress).
