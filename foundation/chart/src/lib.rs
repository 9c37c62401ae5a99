//! Legible charts for wirebench reports, as SVG and PNG.
//!
//! The crate is pure: it turns a [`Chart`] description into SVG text
//! ([`render_svg`]) or PNG bytes ([`render_png`]) and never touches files,
//! the network or system fonts. The PNG is rasterised from the same SVG with
//! only the embedded font, so it is byte-identical on every machine.
//!
//! ```
//! use wirebench_chart::*;
//!
//! let chart = Chart::new(
//!     "Throughput vs payload",
//!     Kind::Lines,
//!     Axis::new("Payload", Unit::Bytes).log(),
//!     Axis::new("Throughput", Unit::BitsPerSecond),
//! )
//! .series(Series::from_xy("TCP", [(10.0, 2e6), (100.0, 2e7), (1000.0, 9e7)]))
//! .reference(Marker::new("Smith et al. 2019", 1000.0, 8e7));
//! let svg = render_svg(&chart);
//! assert!(svg.starts_with("<svg"));
//! let png = render_png(&chart, 1.0).unwrap();
//! assert_eq!(&png[1..4], b"PNG");
//! ```
//!
//! # Chart kinds
//!
//! * [`Kind::Lines`] — a measured quantity against a controlled parameter,
//!   one series per value of another parameter (throughput vs payload size
//!   per transport), or a per-round series (RTT per round). Long series get
//!   markers on every few points only, staggered between series.
//! * [`Kind::Scatter`] — individual observations where joining them would
//!   suggest an order that is not there.
//! * [`Kind::Cdf`] — a latency distribution. Points are `(value, weight)`:
//!   raw samples (weight 1, see [`Series::samples`]) or histogram buckets
//!   (weight = count). The y axis is the cumulative fraction in percent with
//!   dashed p50/p90/p99 guides; the x axis is usually [`Scale::Log`].
//! * [`Kind::Bars`] — one value per category (implementation, scenario …),
//!   one bar per series in each group. `x` is the category index; the y axis
//!   always starts at zero.
//! * [`Kind::Steps`] — values over time that hold until the next sample
//!   (queue depth, window size, connection count).
//!
//! Any chart can carry [`Marker`]s: figures published by other studies,
//! drawn as hollow shapes with their own legend entries so they are never
//! mistaken for measurements. A marker that belongs to a series
//! ([`Marker::of_series`]) is drawn in that series' colour and its legend
//! entry names both ("S1 standard S2S: standard, 2400 bit/s"); others are
//! black. `y_min`/`y_max` on a [`Point`] become an error bar (e.g. min..max
//! over repeats).
//!
//! # Units
//!
//! Values are always given in base units (seconds, bytes, bit/s; percent as
//! a fraction, `0.25` = 25 %). A *linear* axis picks one display unit for
//! all its ticks from the largest magnitude on it — the largest unit in
//! which that magnitude is at least 1 (so 0.8 s becomes "800 ms" but 1.5 s
//! stays "1.5 s"; minutes only from 5 min, hours from 3 h). Bytes use binary
//! units (B, KiB, MiB, GiB), rates decimal (bit/s … Gbit/s), counts k/M/G.
//! Tick labels carry the unit ("250 ms") and the axis title names it once
//! ("Round trip (ms)").
//!
//! A *log* axis spans decades, so each tick picks its own unit ("100 µs",
//! "1 ms", "10 ms"), and the title has no unit. Ticks sit on decades, with 2
//! and 5 labelled too when fewer than three decades are shown. Byte axes
//! always use powers of two (16 B, 64 B, 256 B, 1 KiB …): byte sizes are
//! binary everywhere in wirebench, and a decade in binary units would read
//! "0.98 KiB". Values `<= 0`
//! cannot be placed on a log axis: they are skipped, as are NaN and
//! infinities, and a note under the chart says how many.
//!
//! Linear ticks are 1-2-5 "nice numbers"; the densest set whose labels,
//! measured with the embedded font, keep clear of each other is used.
//!
//! # Layout and style
//!
//! The default canvas is 800×450 ([`Chart::size`] changes it). The legend
//! never overlaps the data: it sits in one or two rows above the plot when
//! it fits there, otherwise in a column to the right, otherwise in a grid
//! below (cut short with "+N more" rather than squashing the plot). A legend
//! entry is never cut mid-word: when one is too long the words every series
//! shares are left out (the subtitle says them) and what remains wraps at its
//! spaces. Category labels that do not fit are shortened with "…" (the full
//! text stays in the SVG `<title>` tooltips) and rotated.
//!
//! No mark straddles the frame: where a marker at the data's edge would (a
//! published figure at zero delay on the y axis), the data are moved in from
//! that side, so the axis' range reaches past the marker with a margin.
//!
//! Up to ten series each get their own colour: the Okabe–Ito colour-blind-safe
//! palette, then the dark hues of Paul Tol's muted one. Series also differ in
//! dash pattern and marker shape (bars: hatching), and no two series ever
//! share both colour and dash. A series whose whole line lies along another's
//! (within about a pixel) cannot be seen, so its legend entry says
//! "(coincides with …)"; so does a group of markers each under another's.
//! Ticks use ≥ 12 px text, titles 16 px.
//!
//! The SVG uses presentation attributes only (no `<style>`) and ids derived
//! from the chart's content, so several charts can be inlined in one HTML
//! page without interfering. All text is XML-escaped; control characters
//! are dropped.
//!
//! # Fonts
//!
//! Text is set in a Latin-1+ subset of DejaVu Sans (regular and bold; see
//! `fonts/README.md`). The SVG names it as [`FONT_FAMILY`] with generic
//! fallbacks; an HTML page can embed [`font_bytes`] and [`font_bold_bytes`]
//! with `@font-face` so browsers draw exactly what the layout measured.
//! Characters outside the subset fall back to another font in browsers and
//! are not drawn in the PNG.

mod data;
mod inspect;
mod layout;
mod legend;
mod model;
mod overlap;
mod style;
mod svg;
mod text;
mod ticks;
mod units;

use std::sync::{Arc, OnceLock};

use resvg::{tiny_skia, usvg};

pub use inspect::{LegendItem, LegendKind, MarkerBox, SeriesStyle};
pub use layout::{LayoutInfo, Rect, TextBox, TextRole};
pub use model::{Axis, Chart, Guide, Kind, Marker, Point, Scale, Series, Unit};

/// The family name the SVG uses for all text; use it in `@font-face`.
pub const FONT_FAMILY: &str = "DejaVu Sans";

/// The embedded regular font (TrueType), e.g. to base64 into `@font-face`.
pub fn font_bytes() -> &'static [u8] {
    text::FONT_REGULAR
}

/// The embedded bold font (TrueType), used for chart titles.
pub fn font_bold_bytes() -> &'static [u8] {
    text::FONT_BOLD
}

/// Why a PNG could not be produced.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    #[error("invalid PNG scale {0}: must be finite and > 0")]
    InvalidScale(f32),
    #[error("image of {width}x{height} pixels is too large")]
    TooLarge { width: u32, height: u32 },
    #[error("could not parse generated SVG: {0}")]
    Svg(String),
    #[error("could not encode PNG: {0}")]
    Encode(String),
}

/// Largest PNG side and area, so a bad scale cannot allocate gigabytes.
const MAX_PNG_SIDE: u32 = 16_384;
const MAX_PNG_PIXELS: f32 = 50e6;

/// Renders the chart as a standalone SVG document (also fine to inline in
/// HTML: ids are unique per chart content and no stylesheet is used).
pub fn render_svg(chart: &Chart) -> String {
    let prep = data::prepare(chart);
    let layout = layout::compute(chart, &prep);
    svg::render(chart, &prep, &layout)
}

/// Where every text and the plot area end up; lets tests check that labels
/// never overlap. Not needed for rendering.
#[doc(hidden)]
pub fn layout_info(chart: &Chart) -> LayoutInfo {
    let prep = data::prepare(chart);
    layout::compute(chart, &prep).info(chart, &prep)
}

fn font_db() -> Arc<usvg::fontdb::Database> {
    static DB: OnceLock<Arc<usvg::fontdb::Database>> = OnceLock::new();
    DB.get_or_init(|| {
        let mut db = usvg::fontdb::Database::new();
        db.load_font_data(text::FONT_REGULAR.to_vec());
        db.load_font_data(text::FONT_BOLD.to_vec());
        // Generic families must resolve to the embedded face too, or text
        // in a fallback family would silently disappear.
        db.set_sans_serif_family(FONT_FAMILY);
        db.set_serif_family(FONT_FAMILY);
        db.set_monospace_family(FONT_FAMILY);
        Arc::new(db)
    })
    .clone()
}

/// Renders the chart as PNG at `scale` × its SVG size (2.0 for crisp
/// output on high-density screens and in print).
pub fn render_png(chart: &Chart, scale: f32) -> Result<Vec<u8>, ChartError> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(ChartError::InvalidScale(scale));
    }
    let svg = render_svg(chart);
    let opts = usvg::Options {
        font_family: FONT_FAMILY.to_string(),
        fontdb: font_db(),
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(&svg, &opts).map_err(|e| ChartError::Svg(e.to_string()))?;
    let size = tree.size();
    let w = (size.width() * scale).ceil();
    let h = (size.height() * scale).ceil();
    if w > MAX_PNG_SIDE as f32 || h > MAX_PNG_SIDE as f32 || w * h > MAX_PNG_PIXELS {
        return Err(ChartError::TooLarge {
            width: w as u32,
            height: h as u32,
        });
    }
    let (w, h) = ((w as u32).max(1), (h as u32).max(1));
    let mut pixmap = tiny_skia::Pixmap::new(w, h).ok_or(ChartError::TooLarge {
        width: w,
        height: h,
    })?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap
        .encode_png()
        .map_err(|e| ChartError::Encode(e.to_string()))
}
