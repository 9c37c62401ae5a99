//! Where everything goes. All text is measured with the embedded font so the
//! layout can guarantee that tick labels do not collide and that the legend
//! sits outside the data; [`TextBox`]es are exposed for tests to verify it.

use crate::data::Prepared;
use crate::inspect::{LegendItem, MarkerBox, SeriesStyle};
use crate::legend::{
    Legend, LegendMode, LegendTexts, RefGroup, entry_kinds, legend_label_texts, plan_legend,
    reference_groups, right_legend,
};
use crate::model::{Chart, Kind, Unit};
use crate::overlap::{self, Coinciding};
use crate::style;
use crate::text;
use crate::ticks::{self, Tick, TickSet};

pub(crate) const PAD: f32 = 16.0;
pub(crate) const TITLE_SIZE: f32 = 16.0;
pub(crate) const SUBTITLE_SIZE: f32 = 13.0;
pub(crate) const AXIS_TITLE_SIZE: f32 = 13.0;
pub(crate) const TICK_SIZE: f32 = 12.0;
pub(crate) const LEGEND_SIZE: f32 = 12.0;
pub(crate) const NOTE_SIZE: f32 = 12.0;
pub(crate) const TICK_LEN: f32 = 5.0;
pub(crate) const SWATCH: f32 = 28.0;
/// Minimum distance between labelled y ticks; closer looks like a ruler.
const Y_TICK_SPACING: f32 = 34.0;
/// Minimum distance between labelled x ticks, and the clear gap between
/// neighbouring x labels.
const X_TICK_SPACING: f32 = 56.0;
const X_LABEL_GAP: f32 = 12.0;
const MAX_LABELS: usize = 12;
/// Category names beyond this are shortened: rotated, they would eat the
/// plot's height.
const MAX_CATEGORY_LABEL: f32 = 150.0;
/// Canvas limits: below these nothing legible fits, above them a typo.
const MIN_WIDTH: u32 = 240;
const MIN_HEIGHT: u32 = 180;
const MAX_SIDE: u32 = 16_000;
/// Cumulative fractions worth a guide line on CDFs.
pub(crate) const CDF_GUIDES: [(f64, &str); 3] = [(0.5, "p50"), (0.9, "p90"), (0.99, "p99")];

/// Widest label of a guide, pixels; longer ones are shortened (the full text is in the
/// caption the report writes).
const GUIDE_LABEL_MAX: f32 = 150.0;

/// The chart's guides in order from the bottom: its own, or a CDF's default quantiles.
/// Sorted so the labels that collide are skipped from the top down, as before.
fn guide_list(chart: &Chart) -> Vec<(f64, String)> {
    let mut list: Vec<(f64, String)> = if chart.guides.is_empty() {
        if matches!(chart.kind, Kind::Cdf) {
            CDF_GUIDES
                .iter()
                .map(|(v, l)| (*v, l.to_string()))
                .collect()
        } else {
            Vec::new()
        }
    } else {
        chart
            .guides
            .iter()
            .filter(|g| g.y.is_finite())
            .map(|g| (g.y, g.label.clone()))
            .collect()
    };
    list.sort_by(|a, b| a.0.total_cmp(&b.0));
    list
}

/// An axis-aligned rectangle in SVG user units (y grows downwards).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub x0: f32,
    pub y0: f32,
    pub x1: f32,
    pub y1: f32,
}

impl Rect {
    pub fn width(&self) -> f32 {
        self.x1 - self.x0
    }

    pub fn height(&self) -> f32 {
        self.y1 - self.y0
    }

    /// True when the interiors overlap (touching edges do not count).
    pub fn intersects(&self, other: &Rect) -> bool {
        self.x0 < other.x1 && other.x0 < self.x1 && self.y0 < other.y1 && other.y0 < self.y1
    }
}

/// What a piece of text is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextRole {
    Title,
    Subtitle,
    XTick,
    YTick,
    XTitle,
    YTitle,
    Legend,
    Note,
    /// CDF percentile guide labels ("p50").
    Guide,
    NoData,
}

/// A laid-out piece of text and the box it occupies.
#[derive(Debug, Clone, PartialEq)]
pub struct TextBox {
    pub role: TextRole,
    pub text: String,
    /// For rotated text (category labels, y-axis title) this is the
    /// axis-aligned box around the rotated text.
    pub bounds: Rect,
    pub rotated: bool,
}

/// The layout as tests see it: where the plot, legend and every text went.
#[derive(Debug, Clone, PartialEq)]
pub struct LayoutInfo {
    pub width: f32,
    pub height: f32,
    /// The data area.
    pub plot: Rect,
    pub legend: Option<Rect>,
    pub texts: Vec<TextBox>,
    /// Each series' stroke, in the chart's order.
    pub series: Vec<SeriesStyle>,
    /// The legend's entries in the order drawn.
    pub legend_items: Vec<LegendItem>,
    /// Every reference marker drawn.
    pub markers: Vec<MarkerBox>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Anchor {
    Start,
    Middle,
    End,
}

#[derive(Debug, Clone)]
pub(crate) struct TextItem {
    pub role: TextRole,
    pub text: String,
    pub x: f32,
    /// Baseline.
    pub y: f32,
    pub size: f32,
    pub bold: bool,
    pub anchor: Anchor,
    /// Degrees, about (x, y).
    pub rotate: f32,
    pub muted: bool,
}

impl TextItem {
    pub(crate) fn new(role: TextRole, text: impl Into<String>, x: f32, y: f32, size: f32) -> Self {
        TextItem {
            role,
            text: text.into(),
            x,
            y,
            size,
            bold: false,
            anchor: Anchor::Start,
            rotate: 0.0,
            muted: false,
        }
    }

    fn anchor(mut self, anchor: Anchor) -> Self {
        self.anchor = anchor;
        self
    }

    pub fn bounds(&self) -> Rect {
        let w = text::width(&self.text, self.size, self.bold);
        let x0 = match self.anchor {
            Anchor::Start => 0.0,
            Anchor::Middle => -w / 2.0,
            Anchor::End => -w,
        };
        let corners = [
            (x0, -text::ascent(self.size)),
            (x0 + w, -text::ascent(self.size)),
            (x0, text::descent(self.size)),
            (x0 + w, text::descent(self.size)),
        ];
        let (s, c) = self.rotate.to_radians().sin_cos();
        let mut r = Rect {
            x0: f32::INFINITY,
            y0: f32::INFINITY,
            x1: f32::NEG_INFINITY,
            y1: f32::NEG_INFINITY,
        };
        for (dx, dy) in corners {
            let x = self.x + dx * c - dy * s;
            let y = self.y + dx * s + dy * c;
            r.x0 = r.x0.min(x);
            r.x1 = r.x1.max(x);
            r.y0 = r.y0.min(y);
            r.y1 = r.y1.max(y);
        }
        r
    }
}

/// A placed axis: its range and ticks, and how values map to pixels.
#[derive(Debug, Clone)]
pub(crate) struct AxisLayout {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
    /// Larger values nearer the origin ([`crate::Axis::reversed`]).
    pub reversed: bool,
    pub ticks: Vec<Tick>,
    pub title_unit: Option<String>,
}

impl AxisLayout {
    /// Maps `v` to the fraction 0..1 along the axis.
    pub fn frac(&self, v: f64) -> f64 {
        let t = if self.log {
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        match (t.is_finite(), self.reversed) {
            (false, _) => 0.5,
            (true, false) => t,
            (true, true) => 1.0 - t,
        }
    }

    fn from_set(set: TickSet, log: bool) -> Self {
        AxisLayout {
            lo: set.lo,
            hi: set.hi,
            log,
            reversed: false,
            ticks: set.ticks,
            title_unit: set.title_unit,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub width: f32,
    pub height: f32,
    /// The frame: the axes run along its left and bottom edges.
    pub plot: Rect,
    /// Where the axes' ranges map to: the frame, or inside it where a mark at the data's
    /// edge would otherwise straddle the frame.
    pub data: Rect,
    pub x: AxisLayout,
    pub y: AxisLayout,
    /// Category bands instead of numeric x ticks.
    pub categorical: bool,
    pub texts: Vec<TextItem>,
    pub legend: Option<Legend>,
    /// The reference markers' groups, and each marker's (per chart.references index).
    pub ref_groups: Vec<RefGroup>,
    pub ref_group: Vec<usize>,
    /// Per series and marker group, the one drawn later that hides it, if any.
    pub coincides: Coinciding,
    pub empty: bool,
    /// CDF guide lines (fractions) actually drawn.
    pub guides: Vec<f64>,
}

impl Layout {
    /// Positions are clamped to a few canvas sizes around the canvas: data
    /// outside the axis range must not become astronomically large path
    /// coordinates, which some rasterisers cannot handle.
    pub fn px(&self, v: f64) -> f32 {
        let t = self.x.frac(v).clamp(-5.0, 6.0) as f32;
        self.data.x0 + t * self.data.width()
    }

    pub fn py(&self, v: f64) -> f32 {
        let t = self.y.frac(v).clamp(-5.0, 6.0) as f32;
        self.data.y1 - t * self.data.height()
    }

    /// The colour a reference marker group is drawn in: its series', else black.
    pub fn ref_colour(&self, group: usize) -> &'static str {
        match self.ref_groups[group].series {
            Some(s) => style::colour(s),
            None => style::REFERENCE,
        }
    }

    pub fn info(&self, chart: &Chart, prep: &Prepared) -> LayoutInfo {
        let (series, legend_items, markers) = crate::inspect::describe(chart, prep, self);
        LayoutInfo {
            width: self.width,
            height: self.height,
            plot: self.plot,
            legend: self.legend.as_ref().map(|l| l.rect),
            texts: self
                .texts
                .iter()
                .map(|t| TextBox {
                    role: t.role,
                    text: t.text.clone(),
                    bounds: t.bounds(),
                    rotated: t.rotate != 0.0,
                })
                .collect(),
            series,
            legend_items,
            markers,
        }
    }
}

fn axis_title(label: &str, unit: Option<&str>) -> String {
    match unit {
        Some(u) if !label.is_empty() => format!("{label} ({u})"),
        _ => label.to_string(),
    }
}

/// Stretches a linear range to zero when the data sit closer to zero than
/// to their own spread, so bars of magnitude are not exaggerated.
fn anchor_zero(lo: f64, hi: f64, force: bool) -> (f64, f64) {
    if force {
        return (lo.min(0.0), hi.max(0.0));
    }
    if lo >= 0.0 && lo <= 0.5 * hi {
        (0.0, hi)
    } else if hi <= 0.0 && hi >= 0.5 * lo {
        (lo, 0.0)
    } else {
        (lo, hi)
    }
}

fn y_candidates(chart: &Chart, prep: &Prepared) -> (Vec<TickSet>, bool) {
    let Some((lo, hi)) = prep.y_range else {
        return (Vec::new(), false);
    };
    match chart.kind {
        Kind::Cdf => (ticks::linear(&Unit::Percent, 0.0, 1.0), false),
        _ if prep.y_log => (ticks::log(&chart.y.unit, lo, hi, prep.y_pow2), true),
        // Magnitudes start at zero (a 61-67 B axis made 4.5 B look like a cliff); a scale
        // that does not (a signed difference) keeps its own range.
        _ => {
            let (lo, hi) = anchor_zero(lo, hi, true);
            (ticks::linear(&chart.y.unit, lo, hi), false)
        }
    }
}

fn x_candidates(chart: &Chart, prep: &Prepared) -> Vec<TickSet> {
    let Some((lo, hi)) = prep.x_range else {
        return Vec::new();
    };
    if prep.x_log {
        ticks::log(&chart.x.unit, lo, hi, prep.x_pow2)
    } else {
        ticks::linear(&chart.x.unit, lo, hi)
    }
}

fn pick_y(cands: Vec<TickSet>, log: bool, plot_h: f32) -> AxisLayout {
    let n = cands.len();
    for (i, set) in cands.into_iter().enumerate() {
        let axis = AxisLayout::from_set(set, log);
        let pos: Vec<f32> = axis
            .ticks
            .iter()
            .filter(|t| t.label.is_some())
            .map(|t| axis.frac(t.value) as f32 * plot_h)
            .collect();
        let spaced = pos
            .windows(2)
            .all(|w| (w[1] - w[0]).abs() >= Y_TICK_SPACING);
        if (spaced && pos.len() <= MAX_LABELS) || i + 1 == n {
            return axis;
        }
    }
    unreachable!("pick_y is only called with candidates")
}

/// X tick label items for `axis` over the span x0..x1, baseline `y`.
fn x_tick_items(axis: &AxisLayout, x0: f32, x1: f32, y: f32) -> Vec<TextItem> {
    let mut items: Vec<TextItem> = axis
        .ticks
        .iter()
        .filter_map(|t| {
            let label = t.label.as_ref()?;
            let px = x0 + axis.frac(t.value) as f32 * (x1 - x0);
            Some(
                TextItem::new(TextRole::XTick, label.clone(), px, y, TICK_SIZE)
                    .anchor(Anchor::Middle),
            )
        })
        .collect();
    // Left to right, whichever way the axis runs (spacing is checked in that order).
    items.sort_by(|a, b| a.x.total_cmp(&b.x));
    items
}

fn x_fits(items: &[TextItem]) -> bool {
    if items.len() > MAX_LABELS {
        return false;
    }
    items.windows(2).all(|w| {
        let (a, b) = (w[0].bounds(), w[1].bounds());
        b.x0 - a.x1 >= X_LABEL_GAP && (w[1].x - w[0].x) >= X_TICK_SPACING
    })
}

/// The layout. Whether a series' line (or a marker) lies along another's can only be
/// seen once the axes are placed, and saying so lengthens its legend entry, which moves
/// the plot: so a first layout finds what coincides and a second one names it.
pub(crate) fn compute(chart: &Chart, prep: &Prepared) -> Layout {
    // Both layouts choose among the same ticks; making them is most of the work.
    let (y, y_log) = y_candidates(chart, prep);
    let x = if matches!(chart.kind, Kind::Bars { .. }) {
        Vec::new()
    } else {
        x_candidates(chart, prep)
    };
    let cands = Candidates { x, y, y_log };
    let first = compute_with(chart, prep, &cands, &Coinciding::default());
    if first.empty {
        return first;
    }
    let coincides = overlap::coinciding(chart, prep, &first);
    if coincides.is_empty() {
        return first;
    }
    compute_with(chart, prep, &cands, &coincides)
}

/// The tick sets each axis may take, densest first.
struct Candidates {
    x: Vec<TickSet>,
    y: Vec<TickSet>,
    y_log: bool,
}

fn compute_with(
    chart: &Chart,
    prep: &Prepared,
    cands: &Candidates,
    coincides: &Coinciding,
) -> Layout {
    let width = chart.width.clamp(MIN_WIDTH, MAX_SIDE) as f32;
    let base_height = chart.height.clamp(MIN_HEIGHT, MAX_SIDE) as f32;
    let (ref_groups, ref_group) = reference_groups(chart);
    let legend_texts = LegendTexts::new(chart, width, &ref_groups, coincides);
    // Legend entries: every series (so a series with no valid data is still
    // named) and one per group of reference markers.
    let kinds = entry_kinds(chart.series.len(), &ref_groups);

    let (mut height, mut grown) = (base_height, 0.0);
    let (mut texts, lp) = loop {
        let mut texts: Vec<TextItem> = Vec::new();
        let top = title_block(chart, width, &mut texts);
        // Notes go at the very bottom whatever else happens, since they explain
        // what is missing from the picture.
        let bottom = notes_block(prep, width, height - PAD, &mut texts);
        if prep.is_empty() {
            return empty_layout(width, height, top, bottom, texts, ref_groups, ref_group);
        }
        let lp = plan_legend(&kinds, &legend_texts, (width, height, grown), top, bottom);
        // A legend that does not fit below the plot makes the canvas taller (up to twice
        // its height) rather than leave out entries or squash the plot: a lead figure
        // names every series.
        if lp.short_by > 0.5 && grown == 0.0 {
            grown = lp.short_by.min(base_height);
            height += grown;
            continue;
        }
        break (texts, lp);
    };

    let categorical = matches!(chart.kind, Kind::Bars { .. });
    let guide_w = guide_list(chart)
        .iter()
        .map(|(_, l)| text::width(l, TICK_SIZE, false).min(GUIDE_LABEL_MAX) + 8.0)
        .fold(0.0, f32::max);

    // X title, then the tick label band above it.
    let x_title_h = if chart.x.label.is_empty() {
        0.0
    } else {
        text::line_height(AXIS_TITLE_SIZE) + 6.0
    };
    let x_title_baseline = lp.bottom - text::descent(AXIS_TITLE_SIZE);

    let frame = AxisFrame {
        width,
        categorical,
        top: lp.top,
        bottom: lp.bottom - x_title_h,
        y_title_w: if chart.y.label.is_empty() {
            0.0
        } else {
            text::line_height(AXIS_TITLE_SIZE) + 10.0
        },
        right_reserve: lp.right_reserve,
        guide_w,
        inset: Insets::default(),
    };
    let marks = marks(chart, prep, &ref_groups, &ref_group);
    let Fitted {
        plot,
        data,
        x: x_axis,
        y: y_axis,
        x_items,
    } = fit_clear_of_marks(prep, cands, frame, &marks);
    texts.extend(x_items);

    y_tick_texts(&y_axis, plot, data, &mut texts);
    axis_titles(
        chart,
        categorical,
        &x_axis,
        &y_axis,
        plot,
        x_title_baseline,
        &mut texts,
    );
    let guides = guide_texts(chart, &y_axis, plot, data, &mut texts);
    let legend = match lp.mode {
        Some(LegendMode::Right) => Some(right_legend(&lp, plot, width)),
        _ => lp.legend,
    };
    if let Some(l) = &legend {
        legend_label_texts(l, &mut texts);
    }

    Layout {
        width,
        height,
        plot,
        data,
        x: x_axis,
        y: y_axis,
        categorical,
        texts,
        legend,
        ref_groups,
        ref_group,
        coincides: coincides.clone(),
        empty: false,
        guides,
    }
}

/// Space between a mark and the frame, beyond the mark's own reach.
const MARK_MARGIN: f32 = 2.0;
/// The most a side's data is moved in: a mark farther out is not the data's edge.
const MAX_INSET: f32 = 40.0;

/// Room kept between the frame and the data on each side.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Insets {
    left: f32,
    right: f32,
    top: f32,
    bottom: f32,
}

/// Every mark drawn at a point — reference markers, series markers on lines and
/// scatter plots — as (x, y, how far it paints from its centre).
fn marks(
    chart: &Chart,
    prep: &Prepared,
    groups: &[RefGroup],
    ref_group: &[usize],
) -> Vec<(f64, f64, f32)> {
    let mut out: Vec<(f64, f64, f32)> = prep
        .references
        .iter()
        .map(|&(i, x, y)| {
            let shape = style::reference_shape(groups[ref_group[i]].shape);
            (x, y, style::reference_reach(shape))
        })
        .collect();
    let n = prep.series.len();
    for (s, pts) in prep.series.iter().enumerate() {
        let (marked, r) = match chart.kind {
            Kind::Lines => (style::marker_indices(pts.len(), s, n), style::LINE_MARKER_R),
            Kind::Scatter => ((0..pts.len()).collect(), style::SCATTER_MARKER_R),
            _ => continue,
        };
        let reach = style::series_reach(style::series_shape(s), r);
        out.extend(marked.into_iter().map(|i| (pts[i].x, pts[i].y, reach)));
    }
    out
}

/// How much farther in from the frame each side's data must sit for every mark to lie
/// wholly inside it. Bars sit in their bands, so their sides need no room; they rise from
/// zero on the frame, so neither does a linear axis' bottom (on a log axis, whose floor is
/// arbitrary, they rise from the frame below it).
fn shortfall(marks: &[(f64, f64, f32)], f: &Fitted, categorical: bool) -> Insets {
    let mut d = Insets::default();
    for &(x, y, reach) in marks {
        let need = reach + MARK_MARGIN;
        let cx = f.data.x0 + f.x.frac(x) as f32 * f.data.width();
        let cy = f.data.y1 - f.y.frac(y) as f32 * f.data.height();
        d.top = d.top.max(need - (cy - f.plot.y0));
        if !categorical || f.y.log {
            d.bottom = d.bottom.max(need - (f.plot.y1 - cy));
        }
        if !categorical {
            d.left = d.left.max(need - (cx - f.plot.x0));
            d.right = d.right.max(need - (f.plot.x1 - cx));
        }
    }
    d
}

/// Fits the axes, then moves the data in from each side where a mark would straddle the
/// frame (a published figure at zero delay sat half under the y axis) and fits again,
/// until every mark is clear: the new room can change the ticks and so the marks' places.
fn fit_clear_of_marks(
    prep: &Prepared,
    cands: &Candidates,
    mut frame: AxisFrame,
    marks: &[(f64, f64, f32)],
) -> Fitted {
    let fit = |frame: &AxisFrame| {
        if frame.categorical {
            fit_axes(
                frame,
                &cands.y,
                cands.y_log,
                |x0, x1, plot_y1, tick_baseline| {
                    category_axis(prep, x0, x1, plot_y1, tick_baseline)
                },
            )
        } else {
            fit_axes(frame, &cands.y, cands.y_log, |x0, x1, _, tick_baseline| {
                (
                    numeric_x_axis(
                        &cands.x,
                        (prep.x_log, prep.x_reversed),
                        x0,
                        x1,
                        tick_baseline,
                    ),
                    false,
                )
            })
        }
    };
    let mut fitted = fit(&frame);
    for _ in 0..4 {
        let d = shortfall(marks, &fitted, frame.categorical);
        if d.left.max(d.right).max(d.top).max(d.bottom) <= 0.05 {
            break;
        }
        let grow = |have: f32, more: f32| (have + more.max(0.0)).min(MAX_INSET);
        let i = &mut frame.inset;
        *i = Insets {
            left: grow(i.left, d.left),
            right: grow(i.right, d.right),
            top: grow(i.top, d.top),
            bottom: grow(i.bottom, d.bottom),
        };
        fitted = fit(&frame);
    }
    fitted
}

/// The title and subtitle from the top edge; returns where what follows starts.
fn title_block(chart: &Chart, width: f32, texts: &mut Vec<TextItem>) -> f32 {
    let mut top = PAD;
    if !chart.title.is_empty() {
        let mut t = TextItem::new(
            TextRole::Title,
            text::fit(&chart.title, TITLE_SIZE, true, width - 2.0 * PAD),
            PAD,
            top + text::ascent(TITLE_SIZE),
            TITLE_SIZE,
        );
        t.bold = true;
        texts.push(t);
        top += text::line_height(TITLE_SIZE) + 4.0;
    }
    if let Some(sub) = chart.subtitle.as_ref().filter(|s| !s.is_empty()) {
        let mut t = TextItem::new(
            TextRole::Subtitle,
            text::fit(sub, SUBTITLE_SIZE, false, width - 2.0 * PAD),
            PAD,
            top + text::ascent(SUBTITLE_SIZE),
            SUBTITLE_SIZE,
        );
        t.muted = true;
        texts.push(t);
        top += text::line_height(SUBTITLE_SIZE) + 2.0;
    }
    top + 14.0
}

/// The notes, one a line, up from `bottom`; returns the new bottom above them.
fn notes_block(prep: &Prepared, width: f32, bottom: f32, texts: &mut Vec<TextItem>) -> f32 {
    let note_line = text::line_height(NOTE_SIZE) + 2.0;
    for (i, note) in prep.notes.iter().enumerate() {
        let baseline =
            bottom - (prep.notes.len() - 1 - i) as f32 * note_line - text::descent(NOTE_SIZE);
        let mut t = TextItem::new(
            TextRole::Note,
            text::fit(note, NOTE_SIZE, false, width - 2.0 * PAD),
            PAD,
            baseline,
            NOTE_SIZE,
        );
        t.muted = true;
        texts.push(t);
    }
    if prep.notes.is_empty() {
        bottom
    } else {
        bottom - (prep.notes.len() as f32 * note_line + 6.0)
    }
}

/// A chart with no data: "No data" in the middle of where the plot would be.
fn empty_layout(
    width: f32,
    height: f32,
    top: f32,
    bottom: f32,
    mut texts: Vec<TextItem>,
    ref_groups: Vec<RefGroup>,
    ref_group: Vec<usize>,
) -> Layout {
    let plot = Rect {
        x0: PAD,
        y0: top,
        x1: width - PAD,
        y1: bottom.max(top + 20.0),
    };
    let mut t = TextItem::new(
        TextRole::NoData,
        "No data",
        (plot.x0 + plot.x1) / 2.0,
        (plot.y0 + plot.y1) / 2.0 + (text::ascent(16.0) - text::descent(16.0)) / 2.0,
        16.0,
    )
    .anchor(Anchor::Middle);
    t.muted = true;
    texts.push(t);
    let dummy = AxisLayout {
        lo: 0.0,
        hi: 1.0,
        log: false,
        reversed: false,
        ticks: Vec::new(),
        title_unit: None,
    };
    Layout {
        width,
        height,
        plot,
        data: plot,
        x: dummy.clone(),
        y: dummy,
        categorical: false,
        texts,
        legend: None,
        ref_groups,
        ref_group,
        coincides: Coinciding::default(),
        empty: true,
        guides: Vec::new(),
    }
}

/// The room the axes are fitted into.
#[derive(Debug, Clone)]
struct AxisFrame {
    width: f32,
    categorical: bool,
    top: f32,
    /// Above the x title.
    bottom: f32,
    y_title_w: f32,
    right_reserve: f32,
    guide_w: f32,
    /// Room between the frame and the data.
    inset: Insets,
}

/// The plot and its axes once they fit.
struct Fitted {
    plot: Rect,
    data: Rect,
    x: AxisLayout,
    y: AxisLayout,
    x_items: Vec<TextItem>,
}

/// Fits the plot between the axes' labels. `x_axis(x0, x1, plot_y1, tick_baseline)`
/// gives the x axis, its labels and whether they are rotated. Rotated category labels
/// change the height below the plot and so the y ticks, and labels hanging off the
/// canvas edges push the plot inwards: so it goes round until stable (two passes
/// suffice; the fourth takes what it has).
fn fit_axes(
    f: &AxisFrame,
    y_cands: &[TickSet],
    y_log: bool,
    x_axis: impl Fn(f32, f32, f32, f32) -> ((AxisLayout, Vec<TextItem>), bool),
) -> Fitted {
    let mut extra_below = 0.0f32;
    let mut rotate = false;
    let mut left_min = 0.0f32;
    let mut right_cut = 0.0f32;
    for pass in 0..4 {
        let last_pass = pass == 3;
        let label_band = TICK_LEN + 4.0 + text::line_height(TICK_SIZE) + extra_below;
        let plot_y1 = f.bottom - label_band;
        let data_h = (plot_y1 - f.top - f.inset.top - f.inset.bottom).max(20.0);
        let y_axis = pick_y(y_cands.to_vec(), y_log, data_h);
        let y_label_w = y_axis
            .ticks
            .iter()
            .filter_map(|t| t.label.as_ref())
            .map(|l| text::width(l, TICK_SIZE, false))
            .fold(0.0, f32::max);
        let x0 = (PAD + f.y_title_w + y_label_w + TICK_LEN + 4.0).max(left_min);
        let x1 = f.width - PAD - f.right_reserve - f.guide_w - right_cut;
        let x1 = x1.max(x0 + 40.0 + f.inset.left + f.inset.right);
        let tick_baseline = plot_y1 + TICK_LEN + 4.0 + text::ascent(TICK_SIZE);
        let (data_x0, data_x1) = (x0 + f.inset.left, x1 - f.inset.right);

        let ((x, x_items), needs_rotation) = x_axis(data_x0, data_x1, plot_y1, tick_baseline);
        if needs_rotation != rotate && !last_pass {
            rotate = needs_rotation;
            extra_below = if rotate {
                let deepest = x_items.iter().map(|t| t.bounds().y1).fold(0.0, f32::max);
                (deepest - tick_baseline - text::descent(TICK_SIZE)).max(0.0)
            } else {
                0.0
            };
            continue;
        }

        // Labels hanging off the canvas edges push the plot inwards.
        let first_left = x_items
            .iter()
            .map(|t| t.bounds().x0)
            .fold(f32::INFINITY, f32::min);
        let last_right = x_items
            .iter()
            .map(|t| t.bounds().x1)
            .fold(f32::NEG_INFINITY, f32::max);
        let limit_right =
            f.width - PAD - f.right_reserve + if f.right_reserve > 0.0 { 12.0 } else { 0.0 };
        let mut again = false;
        if first_left < PAD / 2.0 {
            left_min = x0 + (PAD / 2.0 - first_left);
            again = true;
        }
        if last_right > limit_right && !f.categorical {
            right_cut += last_right - limit_right;
            again = true;
        }
        if again && !last_pass {
            continue;
        }

        let plot = Rect {
            x0,
            y0: f.top,
            x1,
            y1: plot_y1,
        };
        let data = Rect {
            x0: data_x0,
            y0: f.top + f.inset.top,
            x1: data_x1,
            y1: (plot_y1 - f.inset.bottom).max(f.top + f.inset.top + 20.0),
        };
        return Fitted {
            plot,
            data,
            x,
            y: y_axis,
            x_items,
        };
    }
    unreachable!("the final layout pass always returns")
}

/// The category axis over x0..x1, one band a category; the labels are rotated (and
/// true returned with them) when the widest does not fit its band.
fn category_axis(
    prep: &Prepared,
    x0: f32,
    x1: f32,
    plot_y1: f32,
    tick_baseline: f32,
) -> ((AxisLayout, Vec<TextItem>), bool) {
    let n = prep.categories.len().max(1);
    let axis = AxisLayout {
        lo: -0.5,
        hi: n as f64 - 0.5,
        log: false,
        reversed: false,
        ticks: text::fit_distinct(&prep.categories, TICK_SIZE, false, MAX_CATEGORY_LABEL)
            .into_iter()
            .enumerate()
            .map(|(i, c)| Tick {
                value: i as f64,
                label: Some(c),
            })
            .collect(),
        title_unit: None,
    };
    let band = (x1 - x0) / n as f32;
    let mut items = x_tick_items(&axis, x0, x1, tick_baseline);
    let widest = items.iter().map(|t| t.bounds().width()).fold(0.0, f32::max);
    let needs_rotation = widest + 8.0 > band;
    if needs_rotation {
        for it in &mut items {
            it.anchor = Anchor::End;
            it.rotate = -40.0;
            it.x += 4.0;
            it.y = plot_y1 + TICK_LEN + 2.0 + text::ascent(TICK_SIZE) * 0.8;
        }
    }
    ((axis, items), needs_rotation)
}

/// The first numeric x axis whose labels fit over x0..x1, else the last candidate.
fn numeric_x_axis(
    x_cands: &[TickSet],
    (x_log, reversed): (bool, bool),
    x0: f32,
    x1: f32,
    tick_baseline: f32,
) -> (AxisLayout, Vec<TextItem>) {
    let n = x_cands.len();
    for (i, set) in x_cands.iter().enumerate() {
        let axis = AxisLayout {
            reversed,
            ..AxisLayout::from_set(set.clone(), x_log)
        };
        let items = x_tick_items(&axis, x0, x1, tick_baseline);
        if x_fits(&items) || i + 1 == n {
            return (axis, items);
        }
    }
    panic!("x candidates are never empty when there is data")
}

/// How far below its centre a tick-size label's baseline sits.
pub(crate) fn tick_centre() -> f32 {
    (text::ascent(TICK_SIZE) - text::descent(TICK_SIZE)) / 2.0
}

/// Y tick labels, right-aligned against the axis and centred on their gridline.
fn y_tick_texts(y_axis: &AxisLayout, plot: Rect, data: Rect, texts: &mut Vec<TextItem>) {
    let centre = tick_centre();
    for t in &y_axis.ticks {
        if let Some(label) = &t.label {
            let py = data.y1 - y_axis.frac(t.value) as f32 * data.height();
            texts.push(
                TextItem::new(
                    TextRole::YTick,
                    label.clone(),
                    plot.x0 - TICK_LEN - 4.0,
                    py + centre,
                    TICK_SIZE,
                )
                .anchor(Anchor::End),
            );
        }
    }
}

/// The axis titles with their units: x's under the plot, y's rotated left of it.
fn axis_titles(
    chart: &Chart,
    categorical: bool,
    x_axis: &AxisLayout,
    y_axis: &AxisLayout,
    plot: Rect,
    x_title_baseline: f32,
    texts: &mut Vec<TextItem>,
) {
    if !chart.x.label.is_empty() {
        let unit = if categorical {
            None
        } else {
            x_axis.title_unit.as_deref()
        };
        texts.push(
            TextItem::new(
                TextRole::XTitle,
                text::fit(
                    &axis_title(&chart.x.label, unit),
                    AXIS_TITLE_SIZE,
                    false,
                    plot.width(),
                ),
                (plot.x0 + plot.x1) / 2.0,
                x_title_baseline,
                AXIS_TITLE_SIZE,
            )
            .anchor(Anchor::Middle),
        );
    }
    if !chart.y.label.is_empty() {
        let mut t = TextItem::new(
            TextRole::YTitle,
            text::fit(
                &axis_title(&chart.y.label, y_axis.title_unit.as_deref()),
                AXIS_TITLE_SIZE,
                false,
                plot.height(),
            ),
            PAD + text::ascent(AXIS_TITLE_SIZE),
            (plot.y0 + plot.y1) / 2.0,
            AXIS_TITLE_SIZE,
        )
        .anchor(Anchor::Middle);
        t.rotate = -90.0;
        texts.push(t);
    }
}

/// The guides' labels right of the plot, skipping those out of range or too close to
/// the one below; returns the guides drawn.
fn guide_texts(
    chart: &Chart,
    y_axis: &AxisLayout,
    plot: Rect,
    data: Rect,
    texts: &mut Vec<TextItem>,
) -> Vec<f64> {
    let centre = tick_centre();
    let mut guides = Vec::new();
    let mut last_y = f32::INFINITY;
    for (value, name) in guide_list(chart) {
        if !(y_axis.lo..=y_axis.hi).contains(&value) && !y_axis.log {
            continue;
        }
        let py = data.y1 - y_axis.frac(value) as f32 * data.height();
        if last_y - py < text::line_height(TICK_SIZE) + 2.0 {
            continue;
        }
        last_y = py;
        guides.push(value);
        let mut t = TextItem::new(
            TextRole::Guide,
            text::fit(&name, TICK_SIZE, false, GUIDE_LABEL_MAX),
            plot.x1 + 5.0,
            py + centre,
            TICK_SIZE,
        );
        t.muted = true;
        texts.push(t);
    }
    guides
}
