//! SVG output. Only presentation attributes, no `<style>` element: the SVG is
//! inlined into HTML pages, where a stylesheet would leak into the page and
//! into the other charts on it.

use std::fmt::Write;

use crate::data::{Prepared, Pt};
use crate::layout::{Anchor, Layout, SWATCH, TICK_LEN, TextItem};
use crate::legend::EntryKind;
use crate::model::{Chart, Kind};
use crate::style::{self, Shape, fmt};

/// The font stack: the embedded face first, then metric-compatible and
/// generic fallbacks for viewers that did not load it.
pub(crate) const FONT_STACK: &str = "'DejaVu Sans', 'Bitstream Vera Sans', Verdana, sans-serif";

/// Escapes text for XML and drops characters XML 1.0 cannot carry at all
/// (control characters), which would otherwise make the document invalid.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(' '),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

/// A short id prefix derived from the chart's content, so several charts
/// inlined in one page never share pattern ids, yet output stays
/// deterministic.
fn id_prefix(chart: &Chart) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in format!("{chart:?}").bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("wbc{:010x}", h & 0xff_ffff_ffff)
}

/// Snaps a 1 px line to the pixel grid so it renders crisp, not as a 2 px
/// grey smear.
fn crisp(v: f32) -> f32 {
    v.floor() + 0.5
}

struct Svg {
    out: String,
}

impl Svg {
    fn text(&mut self, t: &TextItem) {
        if t.text.is_empty() {
            return;
        }
        let anchor = match t.anchor {
            Anchor::Start => "",
            Anchor::Middle => " text-anchor=\"middle\"",
            Anchor::End => " text-anchor=\"end\"",
        };
        let weight = if t.bold { " font-weight=\"bold\"" } else { "" };
        let fill = if t.muted {
            style::TEXT_MUTED
        } else {
            style::TEXT
        };
        let transform = if t.rotate != 0.0 {
            format!(
                " transform=\"rotate({} {} {})\"",
                fmt(t.rotate),
                fmt(t.x),
                fmt(t.y)
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            self.out,
            "<text x=\"{}\" y=\"{}\" font-size=\"{}\" fill=\"{fill}\"{anchor}{weight}{transform}>{}</text>",
            fmt(t.x),
            fmt(t.y),
            fmt(t.size),
            esc(&t.text)
        );
    }
}

fn dash_attr(series: usize) -> String {
    let d = style::dash(series);
    if d.is_empty() {
        String::new()
    } else {
        format!(" stroke-dasharray=\"{d}\"")
    }
}

fn bar_fill(prefix: &str, series: usize) -> String {
    if style::bar_pattern(series) == 0 {
        style::colour(series).to_string()
    } else {
        format!("url(#{prefix}-b{series})")
    }
}

fn bar_patterns(out: &mut String, prefix: &str, n: usize) {
    let mut defs = String::new();
    for s in 0..n {
        let (rotate, lines) = match style::bar_pattern(s) {
            0 => continue,
            1 => (45, "M0 0V6"),
            2 => (-45, "M0 0V6"),
            3 => (0, "M0 3H6"),
            _ => (45, "M3 0V6M0 3H6"),
        };
        let _ = write!(
            defs,
            "<pattern id=\"{prefix}-b{s}\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" \
             patternTransform=\"rotate({rotate})\"><rect width=\"6\" height=\"6\" fill=\"{c}\"/>\
             <path d=\"{lines}\" stroke=\"#ffffff\" stroke-width=\"1.6\" stroke-opacity=\"0.8\"/></pattern>",
            c = style::colour(s)
        );
    }
    if !defs.is_empty() {
        let _ = writeln!(out, "<defs>{defs}</defs>");
    }
}

fn error_bars(l: &Layout, pts: &[Pt], x_of: &dyn Fn(&Pt) -> f32) -> String {
    let mut d = String::new();
    for p in pts {
        if p.y_min.is_none() && p.y_max.is_none() {
            continue;
        }
        let x = x_of(p);
        let y0 = l.py(p.y_min.unwrap_or(p.y));
        let y1 = l.py(p.y_max.unwrap_or(p.y));
        let _ = write!(d, "M{} {}V{}", fmt(x), fmt(y0), fmt(y1));
        for y in [y0, y1] {
            if (y - l.py(p.y)).abs() > 0.5 {
                let _ = write!(d, "M{} {}H{}", fmt(x - 3.5), fmt(y), fmt(x + 3.5));
            }
        }
    }
    d
}

fn series_svg(out: &mut String, chart: &Chart, prep: &Prepared, l: &Layout, prefix: &str) {
    let n_series = chart.series.len();
    for (s, pts) in prep.series.iter().enumerate() {
        if pts.is_empty() {
            continue;
        }
        let colour = style::colour(s);
        let _ = writeln!(out, "<g><title>{}</title>", esc(&chart.series[s].name));
        match &chart.kind {
            Kind::Bars { .. } => {
                let n_cat = prep.categories.len().max(1) as f32;
                let band = l.data.width() / n_cat;
                let group = band * 0.8;
                let bar_w = group / n_series.max(1) as f32;
                let inset = if bar_w > 6.0 { 1.0 } else { 0.0 };
                // On a log axis bars rise from the frame, below its floor (there is no zero).
                let zero = if l.y.log { l.plot.y1 } else { l.py(0.0) };
                let fill = bar_fill(prefix, s);
                let centre = |p: &Pt| l.px(p.x) - group / 2.0 + (s as f32 + 0.5) * bar_w;
                for p in pts {
                    let x = centre(p) - bar_w / 2.0 + inset;
                    let y = l.py(p.y);
                    let (top, h) = if y < zero {
                        (y, zero - y)
                    } else {
                        (zero, y - zero)
                    };
                    let _ = writeln!(
                        out,
                        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\" stroke=\"{colour}\" stroke-width=\"1\"/>",
                        fmt(x),
                        fmt(top),
                        fmt((bar_w - 2.0 * inset).max(0.5)),
                        fmt(h.max(0.0))
                    );
                }
                let eb = error_bars(l, pts, &centre);
                if !eb.is_empty() {
                    let _ = writeln!(
                        out,
                        "<path d=\"{eb}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.3\"/>",
                        style::TEXT
                    );
                }
            }
            kind => {
                let eb = error_bars(l, pts, &|p| l.px(p.x));
                if !eb.is_empty() {
                    let _ = writeln!(
                        out,
                        "<path d=\"{eb}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.2\" stroke-opacity=\"0.8\"/>"
                    );
                }
                let mut d = String::new();
                match kind {
                    Kind::Lines => {
                        for (i, p) in pts.iter().enumerate() {
                            let cmd = if i == 0 || p.gap_before { 'M' } else { 'L' };
                            let _ = write!(d, "{cmd}{} {}", fmt(l.px(p.x)), fmt(l.py(p.y)));
                        }
                    }
                    Kind::Steps => {
                        for (i, p) in pts.iter().enumerate() {
                            if i == 0 || p.gap_before {
                                let _ = write!(d, "M{} {}", fmt(l.px(p.x)), fmt(l.py(p.y)));
                            } else {
                                let _ = write!(d, "H{}V{}", fmt(l.px(p.x)), fmt(l.py(p.y)));
                            }
                        }
                    }
                    Kind::Cdf => {
                        let _ = write!(d, "M{} {}", fmt(l.px(pts[0].x)), fmt(l.py(0.0)));
                        for (i, p) in pts.iter().enumerate() {
                            if i > 0 {
                                let _ = write!(d, "H{}", fmt(l.px(p.x)));
                            }
                            let _ = write!(d, "V{}", fmt(l.py(p.y)));
                        }
                    }
                    _ => {}
                }
                if !d.is_empty() {
                    let _ = writeln!(
                        out,
                        "<path d=\"{d}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" \
                         stroke-linejoin=\"round\" stroke-linecap=\"round\"{}/>",
                        dash_attr(s)
                    );
                }
                let marked: Vec<usize> = match kind {
                    Kind::Lines => style::marker_indices(pts.len(), s, n_series),
                    Kind::Scatter => (0..pts.len()).collect(),
                    _ => Vec::new(),
                };
                let r = if matches!(kind, Kind::Scatter) {
                    style::SCATTER_MARKER_R
                } else {
                    style::LINE_MARKER_R
                };
                let mut m = String::new();
                for i in marked {
                    let p = &pts[i];
                    m.push_str(&style::marker_path(
                        style::series_shape(s),
                        l.px(p.x),
                        l.py(p.y),
                        r,
                    ));
                }
                if !m.is_empty() {
                    let _ = writeln!(
                        out,
                        "<path d=\"{m}\" fill=\"{colour}\" stroke=\"#ffffff\" stroke-width=\"{}\"/>",
                        style::SERIES_OUTLINE
                    );
                }
            }
        }
        out.push_str("</g>\n");
    }
}

/// Hollow, in its series' colour (black without one), with a white halo so it stays
/// visible on top of lines.
fn reference_path(out: &mut String, d: &str, colour: &str) {
    let _ = writeln!(
        out,
        "<path d=\"{d}\" fill=\"none\" stroke=\"#ffffff\" stroke-width=\"{}\" stroke-opacity=\"0.85\"/>\
         <path d=\"{d}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\"/>",
        style::REFERENCE_HALO,
    );
}

fn references_svg(out: &mut String, chart: &Chart, prep: &Prepared, l: &Layout) {
    for (g, group) in l.ref_groups.iter().enumerate() {
        let mut d = String::new();
        for &(i, x, y) in &prep.references {
            if l.ref_group[i] == g {
                d.push_str(&style::marker_path(
                    style::reference_shape(group.shape),
                    l.px(x),
                    l.py(y),
                    style::REFERENCE_R,
                ));
            }
        }
        if d.is_empty() {
            continue;
        }
        let title = match group.series {
            Some(s) => format!("{}: {}", group.label, chart.series[s].name),
            None => group.label.clone(),
        };
        let _ = writeln!(out, "<g><title>{}</title>", esc(&title));
        reference_path(out, &d, l.ref_colour(g));
        out.push_str("</g>\n");
    }
}

fn grid_and_axes(out: &mut String, l: &Layout) {
    let p = l.plot;
    let mut major = String::new();
    let mut minor = String::new();
    let mut ticks = String::new();
    for t in &l.y.ticks {
        let y = crisp(l.py(t.value));
        let d = if t.label.is_some() {
            &mut major
        } else {
            &mut minor
        };
        let _ = write!(d, "M{} {}H{}", fmt(p.x0), fmt(y), fmt(p.x1));
        let len = if t.label.is_some() {
            TICK_LEN
        } else {
            TICK_LEN * 0.6
        };
        let _ = write!(ticks, "M{} {}h{}", fmt(p.x0), fmt(y), fmt(-len));
    }
    if !l.categorical {
        for t in &l.x.ticks {
            let x = crisp(l.px(t.value));
            let d = if t.label.is_some() {
                &mut major
            } else {
                &mut minor
            };
            let _ = write!(d, "M{} {}V{}", fmt(x), fmt(p.y0), fmt(p.y1));
            let len = if t.label.is_some() {
                TICK_LEN
            } else {
                TICK_LEN * 0.6
            };
            let _ = write!(ticks, "M{} {}v{}", fmt(x), fmt(p.y1), fmt(len));
        }
    }
    if !minor.is_empty() {
        let _ = writeln!(
            out,
            "<path d=\"{minor}\" stroke=\"{}\" stroke-width=\"1\"/>",
            style::GRID_MINOR
        );
    }
    if !major.is_empty() {
        let _ = writeln!(
            out,
            "<path d=\"{major}\" stroke=\"{}\" stroke-width=\"1\"/>",
            style::GRID
        );
    }
    for &g in &l.guides {
        let y = crisp(l.py(g));
        let _ = writeln!(
            out,
            "<path d=\"M{} {}H{}\" stroke=\"#8c8c8c\" stroke-width=\"1\" stroke-dasharray=\"4 3\"/>",
            fmt(p.x0),
            fmt(y),
            fmt(p.x1)
        );
    }
    // A zero line when the y range crosses zero, so the sign is obvious.
    if !l.y.log && l.y.lo < 0.0 && l.y.hi > 0.0 {
        let y = crisp(l.py(0.0));
        let _ = writeln!(
            out,
            "<path d=\"M{} {}H{}\" stroke=\"{}\" stroke-width=\"1\"/>",
            fmt(p.x0),
            fmt(y),
            fmt(p.x1),
            style::AXIS
        );
    }
    let (x0, y1) = (crisp(p.x0), crisp(p.y1));
    let _ = writeln!(
        out,
        "<path d=\"M{} {}V{}H{}{ticks}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1\"/>",
        fmt(x0),
        fmt(p.y0),
        fmt(y1),
        fmt(p.x1),
        style::AXIS
    );
}

fn legend_svg(out: &mut String, chart: &Chart, l: &Layout, prefix: &str) {
    let Some(legend) = &l.legend else {
        return;
    };
    for e in &legend.entries {
        let (x, y) = (e.x, e.y);
        let mid = x + SWATCH / 2.0;
        match e.kind {
            EntryKind::Series(s) => {
                let colour = style::colour(s);
                match chart.kind {
                    Kind::Bars { .. } => {
                        let _ = writeln!(
                            out,
                            "<rect x=\"{}\" y=\"{}\" width=\"18\" height=\"12\" fill=\"{}\" stroke=\"{colour}\" stroke-width=\"1\"/>",
                            fmt(mid - 9.0),
                            fmt(y - 6.0),
                            bar_fill(prefix, s)
                        );
                    }
                    Kind::Scatter => {
                        let m = style::marker_path(
                            style::series_shape(s),
                            mid,
                            y,
                            style::SCATTER_MARKER_R,
                        );
                        let _ = writeln!(
                            out,
                            "<path d=\"{m}\" fill=\"{colour}\" stroke=\"#ffffff\" stroke-width=\"{}\"/>",
                            style::SERIES_OUTLINE
                        );
                    }
                    _ => {
                        let _ = writeln!(
                            out,
                            "<path d=\"M{} {}H{}\" stroke=\"{colour}\" stroke-width=\"2\" stroke-linecap=\"round\"{}/>",
                            fmt(x + 1.0),
                            fmt(y),
                            fmt(x + SWATCH - 1.0),
                            dash_attr(s)
                        );
                        if matches!(chart.kind, Kind::Lines) {
                            let m = style::marker_path(
                                style::series_shape(s),
                                mid,
                                y,
                                style::LINE_MARKER_R,
                            );
                            let _ = writeln!(
                                out,
                                "<path d=\"{m}\" fill=\"{colour}\" stroke=\"#ffffff\" stroke-width=\"{}\"/>",
                                style::SERIES_OUTLINE
                            );
                        }
                    }
                }
            }
            EntryKind::Reference(g) => {
                let shape: Shape = style::reference_shape(l.ref_groups[g].shape);
                reference_path(
                    out,
                    &style::marker_path(shape, mid, y, style::REFERENCE_R),
                    l.ref_colour(g),
                );
            }
            EntryKind::More => {}
        }
    }
}

pub(crate) fn render(chart: &Chart, prep: &Prepared, l: &Layout) -> String {
    let mut out = String::with_capacity(16 * 1024);
    let (w, h) = (fmt(l.width), fmt(l.height));
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
         font-family=\"{FONT_STACK}\" role=\"img\">"
    );
    let _ = writeln!(out, "<title>{}</title>", esc(&chart.title));
    if let Some(sub) = &chart.subtitle {
        let _ = writeln!(out, "<desc>{}</desc>", esc(sub));
    }
    let _ = writeln!(out, "<rect width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>");
    let prefix = id_prefix(chart);

    if !l.empty {
        if matches!(chart.kind, Kind::Bars { .. }) {
            bar_patterns(&mut out, &prefix, chart.series.len());
        }
        grid_and_axes(&mut out, l);
        series_svg(&mut out, chart, prep, l, &prefix);
        references_svg(&mut out, chart, prep, l);
        legend_svg(&mut out, chart, l, &prefix);
    } else {
        let p = l.plot;
        let _ = writeln!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"{}\" stroke-dasharray=\"4 3\"/>",
            fmt(crisp(p.x0)),
            fmt(crisp(p.y0)),
            fmt(p.width().round()),
            fmt(p.height().round()),
            style::GRID
        );
    }
    let mut svg = Svg { out };
    for t in &l.texts {
        svg.text(t);
    }
    svg.out.push_str("</svg>\n");
    svg.out
}
