//! The legend beside each panel: what each line, marker and band means.

use plotters::prelude::*;
use plotters::style::text_anchor::HPos;
use plotters::style::text_anchor::Pos;
use plotters::style::text_anchor::VPos;

use super::style;
use super::Area;
use super::DrawResult;

/// How an entry is drawn.
pub(super) enum Key {
    /// A line of this colour and width.
    Line(RGBColor, u32),
    /// A dashed line of this colour.
    Dashed(RGBColor),
    /// A band of this colour.
    Band(RGBColor),
    /// A cross of this colour.
    Cross(RGBColor),
    /// No symbol: a note.
    Note,
}

/// One line of the legend.
pub(super) struct Entry {
    pub(super) key: Key,
    pub(super) label: String,
}

impl Entry {
    pub(super) fn new(key: Key, label: impl Into<String>) -> Self {
        Entry {
            key,
            label: label.into(),
        }
    }
}

/// Top of the first entry, aligned with the top of the plotting area.
const TOP: i32 = 48;
/// Distance between entries.
const ROW: i32 = 20;
/// Left edge and length of the symbols.
const SYMBOL_X: i32 = 8;
const SYMBOL_LEN: i32 = 30;

/// Draws `entries` top to bottom in `area`.
pub(super) fn draw(area: &Area<'_>, entries: &[Entry]) -> DrawResult {
    let text = TextStyle::from((style::FONT, 13).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let mut y = TOP;
    for entry in entries {
        draw_symbol(area, &entry.key, y)?;
        area.draw_text(&entry.label, &text, (SYMBOL_X + SYMBOL_LEN + 8, y))?;
        y += ROW;
    }
    Ok(())
}

fn draw_symbol(area: &Area<'_>, key: &Key, y: i32) -> DrawResult {
    let (x0, x1) = (SYMBOL_X, SYMBOL_X + SYMBOL_LEN);
    match *key {
        Key::Line(colour, width) => area.draw(&PathElement::new(
            [(x0, y), (x1, y)],
            colour.stroke_width(width),
        )),
        Key::Dashed(colour) => {
            let dashes = (x0..x1)
                .step_by(8)
                .map(|x| PathElement::new([(x, y), ((x + 4).min(x1), y)], colour.stroke_width(1)));
            dashes.into_iter().try_for_each(|d| area.draw(&d))
        }
        Key::Band(colour) => area.draw(&Rectangle::new(
            [(x0, y - 7), (x1, y + 7)],
            colour.mix(style::BAND_OPACITY).filled(),
        )),
        Key::Cross(colour) => area.draw(&Cross::new(((x0 + x1) / 2, y), 5, colour.stroke_width(2))),
        Key::Note => Ok(()),
    }
}
