//! ex-token (work in progress).
