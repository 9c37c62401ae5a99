//! The legend: what each entry says and where the entries go. An entry is never cut
//! mid-word: a long one wraps at its spaces onto further lines, and only the words every
//! series shares may be left out (the subtitle says them). Published markers that belong
//! to a series get an entry of their own naming it, right after the series' entry.

use crate::layout::{LEGEND_SIZE, PAD, Rect, SWATCH, TextItem, TextRole, tick_centre};
use crate::model::Chart;
use crate::overlap::Coinciding;
use crate::text;

const LEGEND_ROW: f32 = 20.0;
const LEGEND_GAP: f32 = 18.0;
/// Widest line of an entry at the top or bottom, as a share of the canvas width; a
/// longer one wraps.
const LEGEND_LABEL_SHARE: f32 = 0.45;
/// Widest entry of a legend right of the plot, as a share of the canvas width.
const RIGHT_SHARE: f32 = 0.32;
/// Most of the canvas' height a legend below the plot takes; and what it takes of the
/// height the canvas had when the canvas grows for it.
const LEGEND_SHARE: f32 = 0.45;
const GROWN_SHARE: f32 = 0.2;

/// How far below its first line's each further line of an entry sits.
fn line_step() -> f32 {
    text::line_height(LEGEND_SIZE) + 1.0
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    Series(usize),
    /// A group of reference markers (see [`RefGroup`]).
    Reference(usize),
    /// "+N more" when the legend had to be cut short.
    More,
}

#[derive(Debug, Clone)]
pub(crate) struct LegendEntry {
    pub kind: EntryKind,
    /// Left edge of the swatch and the vertical centre of the first line.
    pub x: f32,
    pub y: f32,
    /// The text, one line each.
    pub lines: Vec<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Legend {
    pub rect: Rect,
    pub entries: Vec<LegendEntry>,
}

/// Reference markers sharing a label and a series: one legend entry, one shape (the
/// label's) and one colour (the series').
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RefGroup {
    pub label: String,
    pub series: Option<usize>,
    /// Which distinct label this is, in order of first appearance: its shape.
    pub shape: usize,
}

/// The marker groups in order of first appearance, and each marker's group. A marker's
/// series past the chart's last counts as none.
pub(crate) fn reference_groups(chart: &Chart) -> (Vec<RefGroup>, Vec<usize>) {
    let mut labels: Vec<&str> = Vec::new();
    let mut groups: Vec<RefGroup> = Vec::new();
    let mut of_marker = Vec::with_capacity(chart.references.len());
    for m in &chart.references {
        let series = m.series.filter(|&s| s < chart.series.len());
        let shape = labels
            .iter()
            .position(|l| *l == m.label)
            .unwrap_or_else(|| {
                labels.push(&m.label);
                labels.len() - 1
            });
        let g = groups
            .iter()
            .position(|g| g.label == m.label && g.series == series)
            .unwrap_or_else(|| {
                groups.push(RefGroup {
                    label: m.label.clone(),
                    series,
                    shape,
                });
                groups.len() - 1
            });
        of_marker.push(g);
    }
    (groups, of_marker)
}

/// The entries in order: each series, then the groups of markers that belong to it (the
/// tie reads along the legend), then the markers of no series.
pub(crate) fn entry_kinds(n_series: usize, groups: &[RefGroup]) -> Vec<EntryKind> {
    let mut kinds = Vec::new();
    for s in 0..n_series {
        kinds.push(EntryKind::Series(s));
        kinds.extend(
            (0..groups.len())
                .filter(|&g| groups[g].series == Some(s))
                .map(EntryKind::Reference),
        );
    }
    kinds.extend(
        (0..groups.len())
            .filter(|&g| groups[g].series.is_none())
            .map(EntryKind::Reference),
    );
    kinds
}

/// Every entry's text, in full and as shown: series names without the words they all
/// share when one is too long, a marker group's label with its series' name, and
/// "(coincides with …)" on a series or marker group that another hides.
pub(crate) struct LegendTexts {
    /// (full, shown) per series.
    series: Vec<(String, String)>,
    /// (full, shown) per marker group.
    references: Vec<(String, String)>,
}

impl LegendTexts {
    pub(crate) fn new(chart: &Chart, width: f32, groups: &[RefGroup], hidden: &Coinciding) -> Self {
        let names: Vec<String> = chart.series.iter().map(|s| s.name.clone()).collect();
        let short = text::drop_common_words(&names, LEGEND_SIZE, false, width * LEGEND_LABEL_SHARE);
        let note = |(full, shown): (String, String), by: Option<(String, String)>| match by {
            Some((by_full, by_shown)) => (
                format!("{full} (coincides with {by_full})"),
                format!("{shown} (coincides with {by_shown})"),
            ),
            None => (full, shown),
        };
        let series = (0..names.len())
            .map(|s| {
                let by = hidden
                    .of_series(s)
                    .map(|o| (names[o].clone(), short[o].clone()));
                note((names[s].clone(), short[s].clone()), by)
            })
            .collect();
        let own = |g: &RefGroup| match g.series {
            // With one series there is nothing to tell apart.
            Some(s) if names.len() > 1 => (
                format!("{}: {}", g.label, names[s]),
                format!("{}: {}", g.label, short[s]),
            ),
            _ => (g.label.clone(), g.label.clone()),
        };
        let references = groups
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let by = hidden.of_group(i).map(|o| match groups[o].series {
                    // The same study's figure for another series: its name says enough.
                    Some(s) if groups[o].label == g.label && names.len() > 1 => {
                        (names[s].clone(), short[s].clone())
                    }
                    _ => own(&groups[o]),
                });
                note(own(g), by)
            })
            .collect();
        LegendTexts { series, references }
    }

    /// What the entry stands for, uncut.
    pub(crate) fn full(&self, kind: EntryKind) -> String {
        match kind {
            EntryKind::Series(i) => self.series[i].0.clone(),
            EntryKind::Reference(g) => self.references[g].0.clone(),
            EntryKind::More => String::new(),
        }
    }

    fn shown(&self, kind: EntryKind, more: usize) -> String {
        match kind {
            EntryKind::Series(i) => self.series[i].1.clone(),
            EntryKind::Reference(g) => self.references[g].1.clone(),
            EntryKind::More => format!("+{more} more"),
        }
    }

    fn lines(&self, kind: EntryKind, more: usize, max_w: f32) -> Vec<String> {
        text::wrap(&self.shown(kind, more), LEGEND_SIZE, false, max_w)
    }
}

fn entry_width(lines: &[String]) -> f32 {
    SWATCH
        + 6.0
        + lines
            .iter()
            .map(|l| text::width(l, LEGEND_SIZE, false))
            .fold(0.0, f32::max)
}

fn entry_height(lines: &[String]) -> f32 {
    LEGEND_ROW + lines.len().saturating_sub(1) as f32 * line_step()
}

/// Places entries in rows no wider than `avail`, returning (row, x offset)
/// per entry. One row flows naturally; several rows form a grid of equal
/// columns so the eye can scan down them.
fn flow(widths: &[f32], avail: f32) -> Vec<(usize, f32)> {
    let total: f32 =
        widths.iter().sum::<f32>() + LEGEND_GAP * widths.len().saturating_sub(1) as f32;
    if total <= avail {
        let mut x = 0.0;
        return widths
            .iter()
            .map(|w| {
                let at = x;
                x += w + LEGEND_GAP;
                (0, at)
            })
            .collect();
    }
    let col = widths.iter().cloned().fold(0.0, f32::max);
    let cols = (((avail + LEGEND_GAP) / (col + LEGEND_GAP)).floor() as usize).max(1);
    (0..widths.len())
        .map(|i| (i / cols, (i % cols) as f32 * (col + LEGEND_GAP)))
        .collect()
}

/// Entries with their lines, laid out in rows: each entry's (row, x offset) and each
/// row's top, the last value being the legend's height.
struct Rows {
    entries: Vec<(EntryKind, Vec<String>)>,
    placed: Vec<(usize, f32)>,
    tops: Vec<f32>,
}

impl Rows {
    fn new(entries: Vec<(EntryKind, Vec<String>)>, avail: f32) -> Rows {
        let widths: Vec<f32> = entries.iter().map(|(_, l)| entry_width(l)).collect();
        let placed = flow(&widths, avail);
        let rows = placed.last().map_or(0, |p| p.0 + 1);
        let mut heights = vec![0.0f32; rows];
        for ((_, lines), &(row, _)) in entries.iter().zip(&placed) {
            heights[row] = heights[row].max(entry_height(lines));
        }
        let mut tops = vec![0.0];
        for h in heights {
            tops.push(tops.last().copied().unwrap_or(0.0) + h);
        }
        Rows {
            entries,
            placed,
            tops,
        }
    }

    fn height(&self) -> f32 {
        self.tops.last().copied().unwrap_or(0.0)
    }

    fn rows(&self) -> usize {
        self.tops.len() - 1
    }

    /// A legend across the canvas, its first row at `y0`.
    fn place(self, y0: f32, width: f32) -> Legend {
        let height = self.height();
        let entries = self
            .entries
            .into_iter()
            .zip(&self.placed)
            .map(|((kind, lines), &(row, x))| LegendEntry {
                kind,
                x: PAD + x,
                y: y0 + self.tops[row] + LEGEND_ROW / 2.0,
                lines,
            })
            .collect();
        Legend {
            rect: Rect {
                x0: PAD,
                y0,
                x1: width - PAD,
                y1: y0 + height,
            },
            entries,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LegendMode {
    Top,
    Right,
    Bottom,
}

/// Where the legend goes, and the room it leaves the plot.
pub(crate) struct LegendPlan {
    pub mode: Option<LegendMode>,
    /// Placed already (top or bottom); a right-hand legend is placed beside the plot.
    pub legend: Option<Legend>,
    pub top: f32,
    pub bottom: f32,
    /// Width kept free right of the plot for a right-hand legend.
    pub right_reserve: f32,
    /// A right-hand legend's entries, one line each, and its width.
    right: Vec<(EntryKind, Vec<String>)>,
    right_w: f32,
    /// How much taller the canvas must grow to hold the whole legend below the plot; 0
    /// when it fits.
    pub short_by: f32,
}

/// Chooses the legend's place: on top when it fits in two rows of one line, on the right
/// when its column fits beside the plot unwrapped, else at the bottom, wrapped, and cut
/// short with "+N more" rather than squash the data. The canvas may have `grown` by that
/// much for the legend: the room below the plot grows by as much.
pub(crate) fn plan_legend(
    kinds: &[EntryKind],
    texts: &LegendTexts,
    (width, height, grown): (f32, f32, f32),
    mut top: f32,
    mut bottom: f32,
) -> LegendPlan {
    let avail_w = width - 2.0 * PAD;
    // Wrapped no wider than two columns allow, so a long legend halves its height.
    let wrap_w = ((avail_w - LEGEND_GAP) / 2.0 - SWATCH - 6.0).min(width * LEGEND_LABEL_SHARE);
    let wrapped = |k: EntryKind| (k, texts.lines(k, 0, wrap_w));
    let top_rows = Rows::new(kinds.iter().map(|&k| wrapped(k)).collect(), avail_w);
    let one_line = top_rows.entries.iter().all(|(_, l)| l.len() == 1);
    let right: Vec<(EntryKind, Vec<String>)> = kinds
        .iter()
        .map(|&k| (k, vec![texts.shown(k, 0)]))
        .collect();
    let right_w = right
        .iter()
        .map(|(_, l)| entry_width(l))
        .fold(0.0, f32::max);
    let est_plot_h = bottom - top - 60.0;
    let mode = if kinds.is_empty() {
        None
    } else if top_rows.rows() <= 2 && one_line {
        Some(LegendMode::Top)
    } else if kinds.len() as f32 * LEGEND_ROW <= est_plot_h && right_w <= RIGHT_SHARE * width {
        Some(LegendMode::Right)
    } else {
        Some(LegendMode::Bottom)
    };

    let mut legend: Option<Legend> = None;
    let mut right_reserve = 0.0;
    let mut short_by = 0.0;
    match mode {
        Some(LegendMode::Top) => {
            let l = top_rows.place(top, width);
            top = l.rect.y1 + 14.0;
            legend = Some(l);
        }
        Some(LegendMode::Right) => right_reserve = right_w + 20.0,
        Some(LegendMode::Bottom) => {
            // The legend may take up to 45 % of the canvas. One that needs more makes the
            // canvas taller instead (see compute_with), by as much as leaves the plot 80 %
            // of the canvas it had: a squashed plot would hide what the legend names.
            let room =
                |share: f32| ((height - grown) * share - (height - bottom) + grown).max(LEGEND_ROW);
            let max_h = room(if grown > 0.0 {
                GROWN_SHARE
            } else {
                LEGEND_SHARE
            });
            if top_rows.height() > max_h {
                short_by = top_rows.height() - room(GROWN_SHARE);
            }
            let rows = cut_legend(top_rows, texts, max_h, width);
            let h = rows.height();
            let l = rows.place(bottom - h, width);
            bottom = l.rect.y0 - 8.0;
            legend = Some(l);
        }
        None => {}
    }
    LegendPlan {
        mode,
        legend,
        top,
        bottom,
        right_reserve,
        right,
        right_w,
        short_by,
    }
}

/// The entries that fit in `max_h`: all of them, or as many as fit with "+N more" last.
fn cut_legend(all: Rows, texts: &LegendTexts, max_h: f32, width: f32) -> Rows {
    if all.height() <= max_h {
        return all;
    }
    let avail_w = width - 2.0 * PAD;
    let n = all.entries.len();
    let mut keep = n;
    loop {
        keep = keep.saturating_sub(1);
        let mut shown: Vec<(EntryKind, Vec<String>)> = all.entries[..keep].to_vec();
        shown.push((
            EntryKind::More,
            vec![texts.shown(EntryKind::More, n - keep)],
        ));
        let rows = Rows::new(shown, avail_w);
        if rows.height() <= max_h || keep == 0 {
            return rows;
        }
    }
}

/// A legend of one column right of the plot, from its top.
pub(crate) fn right_legend(plan: &LegendPlan, plot: Rect, width: f32) -> Legend {
    let x = width - PAD - plan.right_w;
    let entries: Vec<LegendEntry> = plan
        .right
        .iter()
        .enumerate()
        .map(|(i, (kind, lines))| LegendEntry {
            kind: *kind,
            x,
            y: plot.y0 + i as f32 * LEGEND_ROW + LEGEND_ROW / 2.0,
            lines: lines.clone(),
        })
        .collect();
    Legend {
        rect: Rect {
            x0: x,
            y0: plot.y0,
            x1: width - PAD,
            y1: plot.y0 + entries.len() as f32 * LEGEND_ROW,
        },
        entries,
    }
}

/// Each legend entry's lines beside its swatch.
pub(crate) fn legend_label_texts(l: &Legend, texts: &mut Vec<TextItem>) {
    let centre = tick_centre();
    for e in &l.entries {
        for (k, line) in e.lines.iter().enumerate() {
            texts.push(TextItem::new(
                TextRole::Legend,
                line.clone(),
                e.x + SWATCH + 6.0,
                e.y + centre + k as f32 * line_step(),
                LEGEND_SIZE,
            ));
        }
    }
}
