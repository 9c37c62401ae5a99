//! Which series cannot be seen for another: a series whose whole drawn line lies along
//! another's, within about a pixel, reads as one line with it (proxy-ttfb's five
//! variants that all spend two round trips draw one curve; x2x lay under x2x + TFO). Its
//! legend entry then says with which it coincides, so the reader knows both are there.
//! Likewise a group of published markers each under one of another group's (the study's
//! one figure for x2x and for x2x + TFO).
//!
//! Lines are compared as drawn: each is traced into a grid of one-pixel cells, and one
//! lies along another when (nearly) each of its cells touches one of the other's.

use crate::data::Pt;
use crate::layout::Layout;
use crate::model::{Chart, Kind};

use crate::data::Prepared;

/// Share of a line's cells that may lie off the other's and it still reads as lying
/// along it: a tail of a pixel or two that parts is not something a reader sees.
const VISIBLE_SHARE: f64 = 0.02;

/// The plot as a grid of one-pixel cells.
struct Grid {
    x0: f32,
    y0: f32,
    w: usize,
    h: usize,
}

impl Grid {
    fn cell(&self, x: f32, y: f32) -> usize {
        let cx = ((x - self.x0).floor() as isize).clamp(0, self.w as isize - 1) as usize;
        let cy = ((y - self.y0).floor() as isize).clamp(0, self.h as isize - 1) as usize;
        cy * self.w + cx
    }

    /// The cells of the straight line from `a` to `b` that lie in the grid, sampled every
    /// half pixel. The line is clipped to the grid first: data far off the axes' range
    /// make lines many canvases long.
    fn segment(&self, a: (f32, f32), b: (f32, f32), out: &mut Vec<usize>) {
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let (mut t0, mut t1) = (0.0f32, 1.0f32);
        let (x1, y1) = (self.x0 + self.w as f32, self.y0 + self.h as f32);
        // Liang–Barsky: each edge bounds the part of the line inside it.
        for (p, q) in [
            (-dx, a.0 - self.x0),
            (dx, x1 - a.0),
            (-dy, a.1 - self.y0),
            (dy, y1 - a.1),
        ] {
            if p == 0.0 {
                if q < 0.0 {
                    return;
                }
            } else if p < 0.0 {
                t0 = t0.max(q / p);
            } else {
                t1 = t1.min(q / p);
            }
        }
        if t0.is_nan() || t1.is_nan() || t0 > t1 {
            return;
        }
        let len = (t1 - t0) * dx.abs().max(dy.abs());
        let n = (len * 2.0).ceil().clamp(1.0, 1e5) as usize;
        for k in 0..=n {
            let t = t0 + (t1 - t0) * k as f32 / n as f32;
            out.push(self.cell(a.0 + t * dx, a.1 + t * dy));
        }
    }

    /// Whether `cell` or one of its eight neighbours is among `on` (sorted).
    fn near(&self, on: &[usize], cell: usize) -> bool {
        let (cx, cy) = ((cell % self.w) as isize, (cell / self.w) as isize);
        (-1..=1).any(|dy| {
            (-1..=1).any(|dx| {
                let (x, y) = (cx + dx, cy + dy);
                x >= 0
                    && y >= 0
                    && (x as usize) < self.w
                    && (y as usize) < self.h
                    && on
                        .binary_search(&(y as usize * self.w + x as usize))
                        .is_ok()
            })
        })
    }
}

/// The corners of a series' line as the SVG draws it, one run per unbroken stretch;
/// scatter points are runs of one.
fn runs(kind: &Kind, pts: &[Pt], l: &Layout) -> Vec<Vec<(f32, f32)>> {
    let at = |p: &Pt| (l.px(p.x), l.py(p.y));
    match kind {
        Kind::Lines => {
            let mut out: Vec<Vec<(f32, f32)>> = Vec::new();
            for (i, p) in pts.iter().enumerate() {
                if i == 0 || p.gap_before {
                    out.push(Vec::new());
                }
                if let Some(run) = out.last_mut() {
                    run.push(at(p));
                }
            }
            out
        }
        Kind::Scatter => pts.iter().map(|p| vec![at(p)]).collect(),
        Kind::Steps | Kind::Cdf => {
            let Some(first) = pts.first() else {
                return Vec::new();
            };
            let mut run = Vec::new();
            if matches!(kind, Kind::Cdf) {
                run.push((l.px(first.x), l.py(0.0)));
            }
            run.push(at(first));
            for w in pts.windows(2) {
                run.push((l.px(w[1].x), l.py(w[0].y)));
                run.push(at(&w[1]));
            }
            vec![run]
        }
        Kind::Bars { .. } => Vec::new(),
    }
}

/// Per series and per marker group, the one drawn later that hides it, if any.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Coinciding {
    pub series: Vec<Option<usize>>,
    pub groups: Vec<Option<usize>>,
}

impl Coinciding {
    pub fn of_series(&self, s: usize) -> Option<usize> {
        self.series.get(s).copied().flatten()
    }

    pub fn of_group(&self, g: usize) -> Option<usize> {
        self.groups.get(g).copied().flatten()
    }

    pub fn is_empty(&self) -> bool {
        self.series.iter().chain(&self.groups).all(Option::is_none)
    }
}

pub(crate) fn coinciding(chart: &Chart, prep: &Prepared, l: &Layout) -> Coinciding {
    Coinciding {
        series: coinciding_lines(chart, prep, l),
        groups: coinciding_markers(prep, l),
    }
}

/// Of the pairs where `a` lies along `b` (`along[a][b]`), the one each `a` names: the
/// latest drawn, on top; of two that lie along each other only the lower is named, the
/// upper being the one seen.
fn latest(along: &[Vec<bool>]) -> Vec<Option<usize>> {
    let n = along.len();
    (0..n)
        .map(|a| {
            (0..n)
                .rev()
                .find(|&b| along[a][b] && !(along[b][a] && b < a))
        })
        .collect()
}

/// Markers this close (pixels between centres) are one mark to the eye.
const SAME_PLACE: f32 = 1.5;

/// Marker groups whose every marker sits on one of another group's (drawn in group
/// order, so a later group's cover an earlier's).
fn coinciding_markers(prep: &Prepared, l: &Layout) -> Vec<Option<usize>> {
    let n = l.ref_groups.len();
    let mut at: Vec<Vec<(f32, f32)>> = vec![Vec::new(); n];
    for &(i, x, y) in &prep.references {
        at[l.ref_group[i]].push((l.px(x), l.py(y)));
    }
    let covered = |a: &[(f32, f32)], b: &[(f32, f32)]| {
        !a.is_empty()
            && a.iter()
                .all(|p| b.iter().any(|q| (p.0 - q.0).hypot(p.1 - q.1) <= SAME_PLACE))
    };
    let along: Vec<Vec<bool>> = (0..n)
        .map(|a| (0..n).map(|b| a != b && covered(&at[a], &at[b])).collect())
        .collect();
    latest(&along)
}

/// For each series, the one whose line its own lies along (see [`latest`]). Bars stand
/// side by side and never hide each other.
fn coinciding_lines(chart: &Chart, prep: &Prepared, l: &Layout) -> Vec<Option<usize>> {
    let n = prep.series.len();
    if n < 2 || matches!(chart.kind, Kind::Bars { .. }) {
        return vec![None; n];
    }
    let grid = Grid {
        x0: l.plot.x0,
        y0: l.plot.y0,
        w: l.plot.width().ceil().max(1.0) as usize + 1,
        h: l.plot.height().ceil().max(1.0) as usize + 1,
    };
    let cells: Vec<Vec<usize>> = prep
        .series
        .iter()
        .map(|pts| {
            let mut c = Vec::new();
            for run in runs(&chart.kind, pts, l) {
                match run.as_slice() {
                    [only] => c.push(grid.cell(only.0, only.1)),
                    _ => run
                        .windows(2)
                        .for_each(|w| grid.segment(w[0], w[1], &mut c)),
                }
            }
            c.sort_unstable();
            c.dedup();
            c
        })
        .collect();
    // along[a][b]: a's line lies along b's.
    let mut along = vec![vec![false; n]; n];
    for b in (0..n).filter(|&b| !cells[b].is_empty()) {
        for a in (0..n).filter(|&a| a != b && !cells[a].is_empty()) {
            let allowed = (VISIBLE_SHARE * cells[a].len() as f64) as usize;
            // Stops counting once too much of a shows: most pairs part at once.
            let off = cells[a]
                .iter()
                .filter(|&&c| !grid.near(&cells[b], c))
                .take(allowed + 1)
                .count();
            along[a][b] = off <= allowed;
        }
    }
    latest(&along)
}
