//! What a laid-out chart draws, in terms a test can check without parsing SVG: each
//! series' stroke, each legend entry with the text it stands for, each reference marker's
//! colour and extent. Reports are checked against these (a reused stroke, a legend entry
//! cut short, a marker straddling the frame) for every built-in scenario.

use crate::data::Prepared;
use crate::layout::{Layout, Rect};
use crate::legend::{EntryKind, LegendTexts};
use crate::model::Chart;
use crate::style;

/// How one series is stroked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesStyle {
    pub colour: String,
    /// The SVG dash array; empty for a solid line.
    pub dash: String,
    /// The series drawn later whose line this one's lies along (the legend says so).
    pub coincides_with: Option<usize>,
}

/// What a legend entry stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LegendKind {
    Series(usize),
    /// Reference markers sharing `label` (and the series they belong to, if any).
    Reference {
        label: String,
        series: Option<usize>,
    },
    /// "+N more": the entries that did not fit.
    More,
}

/// A legend entry: what it names in full and the lines it shows.
#[derive(Debug, Clone, PartialEq)]
pub struct LegendItem {
    pub kind: LegendKind,
    /// The whole text the entry stands for (a series' name, a marker's label).
    pub full: String,
    /// The text drawn, one line each.
    pub lines: Vec<String>,
}

/// A drawn reference marker.
#[derive(Debug, Clone, PartialEq)]
pub struct MarkerBox {
    pub label: String,
    pub series: Option<usize>,
    pub colour: String,
    /// Everything the marker paints, its halo included.
    pub bounds: Rect,
}

/// The series' strokes, legend entries and markers as `l` draws them.
pub(crate) fn describe(
    chart: &Chart,
    prep: &Prepared,
    l: &Layout,
) -> (Vec<SeriesStyle>, Vec<LegendItem>, Vec<MarkerBox>) {
    let series = (0..chart.series.len())
        .map(|s| SeriesStyle {
            colour: style::colour(s).to_string(),
            dash: style::dash(s),
            coincides_with: l.coincides.of_series(s),
        })
        .collect();
    let texts = LegendTexts::new(chart, l.width, &l.ref_groups, &l.coincides);
    let legend = l
        .legend
        .iter()
        .flat_map(|lg| &lg.entries)
        .map(|e| LegendItem {
            kind: match e.kind {
                EntryKind::Series(s) => LegendKind::Series(s),
                EntryKind::Reference(g) => LegendKind::Reference {
                    label: l.ref_groups[g].label.clone(),
                    series: l.ref_groups[g].series,
                },
                EntryKind::More => LegendKind::More,
            },
            full: texts.full(e.kind),
            lines: e.lines.clone(),
        })
        .collect();
    let markers = prep
        .references
        .iter()
        .map(|&(i, x, y)| {
            let g = l.ref_group[i];
            let (cx, cy) = (l.px(x), l.py(y));
            let reach = style::reference_reach(style::reference_shape(l.ref_groups[g].shape));
            MarkerBox {
                label: chart.references[i].label.clone(),
                series: l.ref_groups[g].series,
                colour: l.ref_colour(g).to_string(),
                bounds: Rect {
                    x0: cx - reach,
                    y0: cy - reach,
                    x1: cx + reach,
                    y1: cy + reach,
                },
            }
        })
        .collect();
    (series, legend, markers)
}
