//! One trace drawn as a chart: window, bytes in flight and PipeSize over
//! time on Careful Resume phase bands, with losses and phase triggers.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::HPos;
use plotters::style::text_anchor::Pos;
use plotters::style::text_anchor::VPos;

use super::legend;
use super::legend::Entry;
use super::legend::Key;
use super::style;
use super::Area;
use super::DrawResult;
use super::Scales;
use crate::event::Phase;
use crate::trace::Series;
use crate::trace::Trace;

/// Width of the legend to the right of the chart.
const LEGEND_WIDTH: u32 = 270;
/// Estimated width of one character of a trigger label, in pixels.
const LABEL_CHAR_PX: i32 = 7;
/// Height of one row of trigger labels, in pixels.
const LABEL_ROW_PX: i32 = 15;
/// Rows of trigger labels before they start to overlap.
const LABEL_ROWS: usize = 4;

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Draws `trace` in `area` on the shared `scales`.
pub(super) fn draw(area: &Area<'_>, trace: &Trace, scales: &Scales) -> DrawResult {
    let (width, _) = area.dim_in_pixel();
    let (chart_area, legend_area) = area.split_horizontally(width.saturating_sub(LEGEND_WIDTH));
    let mut chart = ChartBuilder::on(&chart_area)
        .caption(caption(trace), (style::FONT, 18))
        .margin(10)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..scales.time_s, 0.0..scales.window_kb)?;

    draw_phase_bands(&mut chart, trace, scales)?;
    let decimals = if scales.window_kb < 10.0 { 1 } else { 0 };
    chart
        .configure_mesh()
        .x_desc("time since the trace started (s)")
        .y_desc("bytes (kB = 1000 B)")
        .axis_desc_style((style::FONT, 14))
        .label_style((style::FONT, 12))
        .y_label_formatter(&|kb| format!("{kb:.decimals$}"))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()?;
    let end_s = trace.duration_ms / 1000.0;
    let lines = [
        (&trace.timelines.congestion_window, style::WINDOW, 2),
        (&trace.timelines.bytes_in_flight, style::IN_FLIGHT, 1),
        (&trace.timelines.pipesize, style::PIPESIZE, 2),
    ];
    for (series, colour, width) in lines {
        chart.draw_series(LineSeries::new(
            steps(series, end_s),
            colour.stroke_width(width),
        ))?;
    }
    draw_losses(&mut chart, trace, scales)?;
    draw_triggers(&mut chart, trace, scales)?;
    legend::draw(&legend_area, &legend_entries(trace))
}

/// Title of the panel: the trace and its outcome at a glance.
fn caption(trace: &Trace) -> String {
    let side = trace
        .vantage_point
        .as_deref()
        .map_or(String::new(), |v| format!(" ({v})"));
    let done = trace.completion_ms.map_or(String::new(), |c| {
        format!(", data done {:.2} s into the trace", c / 1000.0)
    });
    format!(
        "{}{side}{done}, {} packets lost",
        trace.name,
        trace.lost_packets()
    )
}

/// The corner points of a step function from `series`, held until `end_s`,
/// in seconds and kB.
fn steps(series: &Series<u64>, end_s: f64) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = Vec::with_capacity(series.samples().len() * 2 + 1);
    for sample in series.samples() {
        let t = sample.time_ms / 1000.0;
        if let Some(&(_, previous)) = points.last() {
            points.push((t, previous));
        }
        points.push((t, kb(sample.value)));
    }
    if let Some(&(t, last)) = points.last() {
        points.push((end_s.max(t), last));
    }
    points
}

fn kb(bytes: u64) -> f64 {
    bytes as f64 / 1000.0
}

fn draw_phase_bands(chart: &mut Chart<'_, '_>, trace: &Trace, scales: &Scales) -> DrawResult {
    let end_ms = trace.duration_ms;
    let bands = trace.phase_spans().into_iter().map(|span| {
        let start = span.start_ms / 1000.0;
        let end = span.end_ms.unwrap_or(end_ms) / 1000.0;
        Rectangle::new(
            [(start, 0.0), (end, scales.window_kb)],
            style::phase_colour(span.phase)
                .mix(style::BAND_OPACITY)
                .filled(),
        )
    });
    chart.draw_series(bands)?;
    Ok(())
}

/// Losses as crosses along the bottom of the chart.
fn draw_losses(chart: &mut Chart<'_, '_>, trace: &Trace, scales: &Scales) -> DrawResult {
    let y = scales.window_kb * 0.025;
    let crosses = trace
        .losses
        .iter()
        .map(|loss| Cross::new((loss.time_ms / 1000.0, y), 5, style::LOSS.stroke_width(2)));
    chart.draw_series(crosses)?;
    Ok(())
}

/// A dashed line at each phase change, labelled with its trigger. Labels
/// that would overlap go to the next row down.
fn draw_triggers(chart: &mut Chart<'_, '_>, trace: &Trace, scales: &Scales) -> DrawResult {
    let (plot_w, plot_h) = chart.plotting_area().dim_in_pixel();
    let px_per_s = f64::from(plot_w) / scales.time_s;
    let kb_per_px = scales.window_kb / f64::from(plot_h.max(1));
    let mut rows: Vec<Vec<(i32, i32)>> = vec![Vec::new(); LABEL_ROWS];
    for change in &trace.phase_changes {
        let t = change.time_ms / 1000.0;
        chart.draw_series(DashedLineSeries::new(
            [(t, 0.0), (t, scales.window_kb)],
            4,
            4,
            style::ANNOTATION.stroke_width(1),
        ))?;
        let Some(trigger) = change.update.trigger else {
            continue;
        };
        let label = trigger.as_str();
        let x = (t * px_per_s) as i32;
        let width = label.len() as i32 * LABEL_CHAR_PX + 6;
        let fits_right = x + width <= plot_w as i32;
        let span = if fits_right {
            (x, x + width)
        } else {
            (x - width, x)
        };
        let row = rows
            .iter()
            .position(|taken| taken.iter().all(|&(a, b)| span.1 <= a || b <= span.0))
            .unwrap_or(LABEL_ROWS - 1);
        rows[row].push(span);
        let y = scales.window_kb - f64::from(4 + row as i32 * LABEL_ROW_PX) * kb_per_px;
        let (anchor, dx) = if fits_right {
            (HPos::Left, 0.004)
        } else {
            (HPos::Right, -0.004)
        };
        let text = TextStyle::from((style::FONT, 12).into_font())
            .color(&style::ANNOTATION)
            .pos(Pos::new(anchor, VPos::Top));
        chart.draw_series([Text::new(label, (t + dx * scales.time_s, y), text)])?;
    }
    Ok(())
}

/// What this panel shows, for its legend.
fn legend_entries(trace: &Trace) -> Vec<Entry> {
    let mut entries = vec![
        Entry::new(Key::Line(style::WINDOW, 2), "congestion window"),
        Entry::new(Key::Line(style::IN_FLIGHT, 1), "bytes in flight"),
    ];
    if !trace.timelines.pipesize.is_empty() {
        entries.push(Entry::new(
            Key::Line(style::PIPESIZE, 2),
            "PipeSize (at phase changes)",
        ));
    }
    entries.push(Entry::new(
        Key::Cross(style::LOSS),
        "packet(s) declared lost",
    ));
    if trace.phase_changes.is_empty() {
        entries.push(Entry::new(Key::Note, "no Careful Resume events"));
        return entries;
    }
    entries.push(Entry::new(
        Key::Dashed(style::ANNOTATION),
        "phase change: trigger",
    ));
    let spans = trace.phase_spans();
    for phase in Phase::ALL {
        if spans.iter().any(|s| s.phase == phase) {
            entries.push(Entry::new(
                Key::Band(style::phase_colour(phase)),
                style::phase_label(phase),
            ));
        }
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_hold_each_value_until_the_next_and_the_end() {
        let mut series = Series::default();
        series.push(1000.0, 2000);
        series.push(3000.0, 5000);
        assert_eq!(
            steps(&series, 4.0),
            vec![(1.0, 2.0), (3.0, 2.0), (3.0, 5.0), (4.0, 5.0)]
        );
    }

    #[test]
    fn empty_series_has_no_steps() {
        assert_eq!(steps(&Series::default(), 4.0), vec![]);
    }
}
