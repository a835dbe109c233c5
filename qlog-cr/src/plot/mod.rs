//! SVG plots of traces: one panel per trace, stacked, on the same time and
//! byte scales so that connections can be compared by eye.

mod legend;
mod panel;
mod style;

use std::fmt;
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::trace::Trace;

/// Width of the whole picture in pixels.
const WIDTH: u32 = 1200;
/// Height of one panel in pixels.
const PANEL_HEIGHT: u32 = 420;
/// Room left above the highest value, as a fraction of it.
const HEADROOM: f64 = 0.12;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type DrawResult = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// A plot could not be made.
#[derive(Debug)]
pub enum PlotError {
    /// There was nothing to plot.
    NoTraces,
    /// Drawing failed.
    Draw(String),
    /// The SVG file could not be written.
    Io(std::io::Error),
}

impl fmt::Display for PlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlotError::NoTraces => f.write_str("no traces to plot"),
            PlotError::Draw(e) => write!(f, "cannot draw the plot: {e}"),
            PlotError::Io(e) => write!(f, "cannot write the plot: {e}"),
        }
    }
}

impl std::error::Error for PlotError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PlotError::Io(e) => Some(e),
            PlotError::NoTraces | PlotError::Draw(_) => None,
        }
    }
}

/// The axis ranges shared by all panels.
struct Scales {
    /// End of the time axis (s).
    time_s: f64,
    /// Top of the byte axis (kB).
    window_kb: f64,
}

impl Scales {
    /// Ranges that fit every trace, with some headroom.
    fn fitting(traces: &[Trace]) -> Scales {
        let end_ms = traces.iter().map(|t| t.duration_ms).fold(0.0, f64::max);
        let top_bytes = traces
            .iter()
            .flat_map(|t| {
                let l = &t.timelines;
                [
                    l.congestion_window.max(),
                    l.bytes_in_flight.max(),
                    l.pipesize.max(),
                ]
            })
            .flatten()
            .max()
            .unwrap_or(0);
        Scales {
            time_s: (end_ms / 1000.0).max(0.001) * (1.0 + HEADROOM / 4.0),
            window_kb: (top_bytes as f64 / 1000.0).max(1.0) * (1.0 + HEADROOM),
        }
    }
}

/// Renders `traces` as an SVG document.
pub fn render_svg(traces: &[Trace]) -> Result<String, PlotError> {
    if traces.is_empty() {
        return Err(PlotError::NoTraces);
    }
    let scales = Scales::fitting(traces);
    let panels = u32::try_from(traces.len()).unwrap_or(u32::MAX);
    let height = PANEL_HEIGHT.saturating_mul(panels);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        let drawn = draw_all(&root, traces, &scales);
        drawn.map_err(|e| PlotError::Draw(e.to_string()))?;
    }
    Ok(svg)
}

fn draw_all(root: &Area<'_>, traces: &[Trace], scales: &Scales) -> DrawResult {
    root.fill(&WHITE)?;
    let areas = root.split_evenly((traces.len(), 1));
    for (area, trace) in areas.iter().zip(traces) {
        panel::draw(area, trace, scales)?;
    }
    root.present()
}

/// Draws `traces` into the SVG file at `path`, one panel per trace.
pub fn plot(traces: &[Trace], path: impl AsRef<Path>) -> Result<(), PlotError> {
    let svg = render_svg(traces)?;
    std::fs::write(path, svg).map_err(PlotError::Io)
}
