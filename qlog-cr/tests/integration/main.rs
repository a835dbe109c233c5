//! Integration tests of qlog-cr on traces written with qlog 0.18's streamer.

mod support;

mod cli;
mod event;
mod fixtures;
mod plot;
mod reader;
