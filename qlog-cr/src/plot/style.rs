//! Colours and sizes shared by the panels and their legends.

use plotters::style::RGBColor;

use crate::event::Phase;

/// Font family of all text.
pub(super) const FONT: &str = "sans-serif";

/// Congestion window line.
pub(super) const WINDOW: RGBColor = RGBColor(31, 90, 180);
/// Bytes in flight line.
pub(super) const IN_FLIGHT: RGBColor = RGBColor(90, 160, 90);
/// PipeSize line.
pub(super) const PIPESIZE: RGBColor = RGBColor(220, 100, 0);
/// Loss markers.
pub(super) const LOSS: RGBColor = RGBColor(200, 0, 0);
/// Phase change lines and their trigger labels.
pub(super) const ANNOTATION: RGBColor = RGBColor(60, 60, 60);

/// Opacity of the phase bands, light enough to keep the lines readable.
pub(super) const BAND_OPACITY: f64 = 0.45;

/// Background colour of a phase band.
pub(super) fn phase_colour(phase: Phase) -> RGBColor {
    match phase {
        Phase::Reconnaissance => RGBColor(140, 190, 235),
        Phase::Unvalidated => RGBColor(255, 205, 90),
        Phase::Validating => RGBColor(150, 215, 130),
        Phase::SafeRetreat => RGBColor(240, 120, 120),
        Phase::Normal => RGBColor(210, 210, 210),
    }
}

/// Legend text of a phase.
pub(super) fn phase_label(phase: Phase) -> &'static str {
    match phase {
        Phase::Reconnaissance => "CR reconnaissance",
        Phase::Unvalidated => "CR unvalidated (jump)",
        Phase::Validating => "CR validating",
        Phase::SafeRetreat => "CR safe retreat",
        Phase::Normal => "CR over (normal)",
    }
}
