//! Cleaning the caller's data into what can actually be drawn: invalid
//! values are dropped (and counted for a note), CDFs are accumulated, bar
//! points are matched to categories.

use crate::model::{Chart, Kind, Scale, Series, Unit};

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Pt {
    pub x: f64,
    pub y: f64,
    pub y_min: Option<f64>,
    pub y_max: Option<f64>,
    /// The line must not be drawn from the previous point to this one
    /// because something invalid lay between them.
    pub gap_before: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    pub series: Vec<Vec<Pt>>,
    /// Reference markers that can be placed: (index into chart.references, x, y).
    pub references: Vec<(usize, f64, f64)>,
    /// For bars: the category labels (possibly synthesised).
    pub categories: Vec<String>,
    pub x_log: bool,
    /// The x axis runs from its largest value ([`crate::Axis::reversed`]).
    pub x_reversed: bool,
    pub y_log: bool,
    /// Log byte axes get power-of-two ticks.
    pub x_pow2: bool,
    pub y_pow2: bool,
    pub notes: Vec<String>,
    /// Data extents in base units, `None` when nothing is drawable.
    pub x_range: Option<(f64, f64)>,
    pub y_range: Option<(f64, f64)>,
}

impl Prepared {
    pub fn is_empty(&self) -> bool {
        self.series.iter().all(Vec::is_empty) && self.references.is_empty()
    }
}

#[derive(Default)]
struct Skipped {
    non_finite: usize,
    non_positive: usize,
    off_category: usize,
    negative_weight: usize,
    off_cdf: usize,
}

fn extend(range: &mut Option<(f64, f64)>, v: f64) {
    *range = Some(match *range {
        None => (v, v),
        Some((a, b)) => (a.min(v), b.max(v)),
    });
}

/// What the chart's kind and scales admit.
struct Admit {
    is_bars: bool,
    is_cdf: bool,
    x_log: bool,
    y_log: bool,
}

impl Admit {
    fn x_ok(&self, x: f64, s: &mut Skipped) -> bool {
        if !x.is_finite() {
            s.non_finite += 1;
            false
        } else if self.x_log && x <= 0.0 {
            s.non_positive += 1;
            false
        } else {
            true
        }
    }

    fn y_ok(&self, y: f64, s: &mut Skipped) -> bool {
        if !y.is_finite() {
            s.non_finite += 1;
            false
        } else if self.y_log && y <= 0.0 {
            s.non_positive += 1;
            false
        } else {
            true
        }
    }

    /// An error bar's end, if drawable (dropped silently: the point still stands).
    fn bound_ok(&self, v: Option<f64>) -> Option<f64> {
        v.filter(|v| v.is_finite() && (!self.y_log || *v > 0.0))
    }
}

pub(crate) fn prepare(chart: &Chart) -> Prepared {
    let is_bars = matches!(chart.kind, Kind::Bars { .. });
    let is_cdf = matches!(chart.kind, Kind::Cdf);
    let admit = Admit {
        is_bars,
        is_cdf,
        x_log: chart.x.scale == Scale::Log && !is_bars,
        // Cumulative fractions are read against zero, so their y axis is always linear.
        // Bars may be log (S2's totals span 3 ms to 48 s): they then rise from the axis'
        // floor.
        y_log: chart.y.scale == Scale::Log && !is_cdf,
    };
    let mut skipped = Skipped::default();
    let categories = categories_of(chart, is_bars);

    let series: Vec<Vec<Pt>> = chart
        .series
        .iter()
        .map(|s| {
            if is_cdf {
                cdf_points(s, &admit, &mut skipped)
            } else {
                let mut pts = plain_points(s, &admit, categories.len(), &mut skipped);
                if matches!(chart.kind, Kind::Steps) {
                    // A step function is only meaningful in time order.
                    pts.sort_by(|a, b| a.x.total_cmp(&b.x));
                }
                pts
            }
        })
        .collect();
    let references = placeable_references(chart, &admit, categories.len(), &mut skipped);
    let (x_range, y_range) = ranges(chart, &series, &references, &admit);

    // Byte sizes are binary everywhere (docs/reports.md): a log byte axis always ticks at
    // powers of two, so its labels stay round (1 KiB, 4 KiB), never "0.98 KiB".
    let x_pow2 = admit.x_log && chart.x.unit == Unit::Bytes;
    let y_pow2 = admit.y_log && chart.y.unit == Unit::Bytes;

    Prepared {
        series,
        references,
        categories,
        x_log: admit.x_log,
        y_log: admit.y_log,
        x_reversed: chart.x.reversed && !is_bars && !is_cdf,
        x_pow2,
        y_pow2,
        notes: skipped.notes(),
        x_range,
        y_range,
    }
}

/// The bar chart's categories: its own names, or without names numbers up to the
/// largest index used.
fn categories_of(chart: &Chart, is_bars: bool) -> Vec<String> {
    let mut categories = match &chart.kind {
        Kind::Bars { categories } => categories.clone(),
        _ => Vec::new(),
    };
    if is_bars && categories.is_empty() {
        let max_index = chart
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|p| p.x.is_finite() && p.x >= -0.5 && p.x < 10_000.0)
            .map(|p| p.x.round() as usize)
            .max();
        if let Some(m) = max_index {
            categories = (0..=m).map(|i| i.to_string()).collect();
        }
    }
    categories
}

/// A CDF series: values (x) with their weights (y) sorted and accumulated into
/// fractions, one point a distinct value.
fn cdf_points(s: &Series, admit: &Admit, skipped: &mut Skipped) -> Vec<Pt> {
    let mut pts: Vec<Pt> = Vec::new();
    let mut weighted: Vec<(f64, f64)> = Vec::new();
    for p in &s.points {
        if !admit.x_ok(p.x, skipped) {
            continue;
        }
        if !p.y.is_finite() {
            skipped.non_finite += 1;
        } else if p.y < 0.0 {
            skipped.negative_weight += 1;
        } else if p.y > 0.0 {
            weighted.push((p.x, p.y));
        }
    }
    weighted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = weighted.iter().map(|w| w.1).sum();
    if total > 0.0 && total.is_finite() {
        let mut acc = 0.0;
        for (x, w) in weighted {
            acc += w;
            let y = (acc / total).min(1.0);
            match pts.last_mut() {
                Some(last) if last.x == x => last.y = y,
                _ => pts.push(Pt {
                    x,
                    y,
                    y_min: None,
                    y_max: None,
                    gap_before: false,
                }),
            }
        }
    }
    pts
}

/// Any other series' drawable points, in order; a skipped point leaves a gap in the
/// line. On bars, x is rounded to its category's index.
fn plain_points(s: &Series, admit: &Admit, categories: usize, skipped: &mut Skipped) -> Vec<Pt> {
    let mut pts: Vec<Pt> = Vec::new();
    let mut gap = false;
    for p in &s.points {
        let mut x = p.x;
        if admit.is_bars {
            let idx = p.x.round();
            if !p.x.is_finite() {
                skipped.non_finite += 1;
                continue;
            }
            if idx < 0.0 || idx >= categories as f64 {
                skipped.off_category += 1;
                continue;
            }
            x = idx;
        } else if !admit.x_ok(p.x, skipped) {
            gap = true;
            continue;
        }
        if !admit.y_ok(p.y, skipped) {
            gap = true;
            continue;
        }
        pts.push(Pt {
            x,
            y: p.y,
            y_min: admit.bound_ok(p.y_min),
            y_max: admit.bound_ok(p.y_max),
            gap_before: gap && !pts.is_empty(),
        });
        gap = false;
    }
    pts
}

/// The reference markers that can be placed, each counted under its reason if not.
fn placeable_references(
    chart: &Chart,
    admit: &Admit,
    categories: usize,
    skipped: &mut Skipped,
) -> Vec<(usize, f64, f64)> {
    let (is_bars, is_cdf) = (admit.is_bars, admit.is_cdf);
    let mut references = Vec::new();
    for (i, m) in chart.references.iter().enumerate() {
        let x_fine = m.x.is_finite() && (!admit.x_log || m.x > 0.0);
        let x_fine =
            x_fine && (!is_bars || (m.x.round() >= 0.0 && m.x.round() < categories as f64));
        let y_fine = m.y.is_finite()
            && (!admit.y_log || m.y > 0.0)
            && (!is_cdf || (0.0..=1.0).contains(&m.y));
        if x_fine && y_fine {
            // On bars a marker may sit over one series' bar of its category (x = index plus
            // that bar's offset), so the fraction is kept.
            let x = m.x;
            references.push((i, x, m.y));
        } else if !m.x.is_finite() || !m.y.is_finite() {
            skipped.non_finite += 1;
        } else if is_bars && !x_fine {
            skipped.off_category += 1;
        } else if is_cdf && !(0.0..=1.0).contains(&m.y) {
            skipped.off_cdf += 1;
        } else {
            skipped.non_positive += 1;
        }
    }
    references
}

/// An extent in base units, `None` with nothing drawable.
type Range = Option<(f64, f64)>;

/// The data's extents: points with their error bars, markers, and the guides when
/// there is data to read against them; a CDF's y is always 0 to 1.
fn ranges(
    chart: &Chart,
    series: &[Vec<Pt>],
    references: &[(usize, f64, f64)],
    admit: &Admit,
) -> (Range, Range) {
    let mut x_range = None;
    let mut y_range = None;
    for p in series.iter().flatten() {
        extend(&mut x_range, p.x);
        extend(&mut y_range, p.y);
        if let Some(v) = p.y_min {
            extend(&mut y_range, v);
        }
        if let Some(v) = p.y_max {
            extend(&mut y_range, v);
        }
    }
    for &(_, x, y) in references {
        extend(&mut x_range, x);
        extend(&mut y_range, y);
    }
    // A guide is drawn only with data to read against it, and then the axis reaches it.
    if y_range.is_some() && !admit.is_cdf {
        for g in chart
            .guides
            .iter()
            .filter(|g| g.y.is_finite() && (!admit.y_log || g.y > 0.0))
        {
            extend(&mut y_range, g.y);
        }
    }
    if admit.is_cdf && y_range.is_some() {
        y_range = Some((0.0, 1.0));
    }
    (x_range, y_range)
}

impl Skipped {
    /// One note for each reason values were skipped.
    fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let plural = |n: usize| if n == 1 { "value" } else { "values" };
        if self.non_finite > 0 {
            let n = self.non_finite;
            notes.push(format!("{n} non-finite {} skipped", plural(n)));
        }
        if self.non_positive > 0 {
            let n = self.non_positive;
            notes.push(format!("{n} {} \u{2264} 0 skipped (log scale)", plural(n)));
        }
        if self.off_category > 0 {
            let n = self.off_category;
            notes.push(format!("{n} {} outside the categories skipped", plural(n)));
        }
        if self.off_cdf > 0 {
            let n = self.off_cdf;
            notes.push(format!(
                "{n} reference {} outside 0–100% skipped",
                plural(n)
            ));
        }
        if self.negative_weight > 0 {
            let n = self.negative_weight;
            notes.push(format!(
                "{n} negative CDF {} skipped",
                if n == 1 { "weight" } else { "weights" }
            ));
        }
        notes
    }
}
