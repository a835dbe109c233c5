//! SVG plots of the fixtures.

use qlog_cr::PlotError;
use qlog_cr::Trace;

fn fixture(name: &str) -> Trace {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    Trace::from_path(path).expect("fixture reads")
}

#[test]
fn panels_carry_titles_axes_legend_and_triggers() {
    let traces = [fixture("plain.sqlog"), fixture("cr-safe-retreat.sqlog")];
    let svg = qlog_cr::render_svg(&traces).unwrap();
    assert!(svg.starts_with("<svg"));
    assert!(svg.contains(r#"width="1200" height="840""#));
    for text in [
        "first connection (no saved state) (server), data done 4.42 s into the trace, 0 packets lost",
        "resumed connection (saved window 600 kB, path shrank) (server), data done 6.72 s into the trace, 66 packets lost",
        "time since the trace started (s)",
        "bytes (kB = 1000 B)",
        "congestion window",
        "bytes in flight",
        "PipeSize (at phase changes)",
        "no Careful Resume events",
        "CR safe retreat",
        "congestion_window_limited",
        "packet_loss",
        "exit_recovery",
    ] {
        assert!(svg.contains(text), "missing {text:?}");
    }
    // Phases the traces never visit stay out of the legend.
    assert!(!svg.contains("CR validating"));
}

#[test]
fn rendering_is_deterministic() {
    let traces = [fixture("cr-every-phase.sqlog")];
    assert_eq!(
        qlog_cr::render_svg(&traces).unwrap(),
        qlog_cr::render_svg(&traces).unwrap()
    );
}

#[test]
fn nothing_to_plot_is_an_error() {
    assert!(matches!(qlog_cr::render_svg(&[]), Err(PlotError::NoTraces)));
}

#[test]
fn a_trace_without_events_still_renders() {
    let header = "\u{1e}{\"trace\":{\"title\":\"empty\"}}\n";
    let trace = Trace::from_reader(header.as_bytes(), "x").unwrap();
    let svg = qlog_cr::render_svg(&[trace]).unwrap();
    assert!(svg.contains("empty, 0 packets lost"));
}
