//! `report.html`: one self-contained page per results directory (no network: the font is
//! embedded, charts are inline SVG), with every chart also saved as SVG and PNG under
//! `charts/`. Everything derives from `results.jsonl`, `run.json` and the per-round files,
//! so `wirebench report DIR` can rebuild it at any time, also after an interrupted run.

use crate::charts::{self, Planned};
use crate::csv::{PivotOptions, pivot};
use crate::files::atomic_write;
use crate::info::RunInfo;
use crate::summary::human;
use base64::Engine;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use wirebench_model::{Record, Status};

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{path}: {error}")]
    Io { path: PathBuf, error: io::Error },
    #[error("{path} line {line}: not a wirebench result record: {error}")]
    Record {
        path: PathBuf,
        line: usize,
        error: serde_json::Error,
    },
    #[error("{0}: no results.jsonl here; give the directory a `wirebench run` wrote")]
    NotResults(PathBuf),
    #[error("chart {stem}: {message}")]
    Chart { stem: String, message: String },
}

/// What was written.
#[derive(Debug)]
pub struct Written {
    pub html: PathBuf,
    pub charts: usize,
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> ReportError + '_ {
    move |error| ReportError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// Reads `results.jsonl`, naming the line of a bad record.
pub fn read_records(dir: &Path) -> Result<Vec<Record>, ReportError> {
    let path = dir.join("results.jsonl");
    if !path.exists() {
        return Err(ReportError::NotResults(dir.to_path_buf()));
    }
    let text = std::fs::read_to_string(&path).map_err(io_err(&path))?;
    // A run killed while appending may leave a torn last line (no newline): that case
    // never finished, so it is skipped; any other bad line is an error.
    let complete = match text.rfind('\n') {
        Some(i)
            if i + 1 < text.len() && serde_json::from_str::<Record>(&text[i + 1..]).is_err() =>
        {
            &text[..=i]
        }
        None if serde_json::from_str::<Record>(&text).is_err() => "",
        _ => &text[..],
    };
    complete
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|error| ReportError::Record {
                path: path.clone(),
                line: i + 1,
                error,
            })
        })
        .collect()
}

pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// The page's style, with the charts' font embedded so text looks the same everywhere.
pub fn head(title: &str) -> String {
    let font = base64::engine::general_purpose::STANDARD.encode(wirebench_chart::font_bytes());
    let bold = base64::engine::general_purpose::STANDARD.encode(wirebench_chart::font_bold_bytes());
    let family = wirebench_chart::FONT_FAMILY;
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
@font-face {{ font-family: "{family}"; src: url(data:font/ttf;base64,{font}) format("truetype"); font-weight: normal; }}
@font-face {{ font-family: "{family}"; src: url(data:font/ttf;base64,{bold}) format("truetype"); font-weight: bold; }}
body {{ font-family: "{family}", sans-serif; color: #1b1b1b; background: #fff; margin: 0 auto; max-width: 1180px; padding: 24px 32px 64px; line-height: 1.45; }}
h1 {{ font-size: 26px; margin: 0 0 4px; }}
h2 {{ font-size: 20px; margin: 36px 0 12px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }}
h3 {{ font-size: 15px; margin: 20px 0 8px; }}
p.lead {{ font-size: 15px; color: #444; margin: 0 0 16px; }}
dl.facts {{ display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; font-size: 13px; margin: 0; }}
dl.facts dt {{ color: #666; }} dl.facts dd {{ margin: 0; overflow-wrap: anywhere; }}
code {{ font-size: 12px; background: #f4f4f4; padding: 1px 4px; border-radius: 3px; }}
table {{ border-collapse: collapse; font-size: 13px; margin: 8px 0 16px; }}
th, td {{ border: 1px solid #d8d8d8; padding: 3px 8px; text-align: left; vertical-align: top; }}
th {{ background: #f3f5f7; font-weight: bold; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }}
tr.failed td {{ background: #fff1f0; }}
.scroll {{ overflow-x: auto; }}
figure.chart {{ margin: 16px 0 28px; }}
figure.chart svg {{ width: 100%; max-width: 960px; height: auto; display: block; border: 1px solid #eee; }}
figure.chart figcaption {{ font-size: 12px; color: #666; margin-top: 4px; }}
nav a {{ margin-right: 14px; font-size: 14px; }}
.good {{ color: #1a7f37; }} .bad {{ color: #b42318; font-weight: bold; }}
ul.notes {{ font-size: 13px; }}
p.warn, ul.warn {{ color: #8a3b00; }}
ul.warn {{ font-size: 13px; background: #fff4e5; padding: 6px 6px 6px 28px; }}
th span.id {{ font-weight: normal; color: #666; font-size: 11px; }}
</style></head>
"#,
        title = esc(title)
    )
}

/// A self-check the browser test reads back: every chart drew with a size.
pub const SELF_CHECK: &str = r#"<script>
(function () {
  var svgs = document.querySelectorAll("figure.chart svg");
  var drawn = 0;
  svgs.forEach(function (s) { var b = s.getBoundingClientRect(); if (b.width > 100 && b.height > 50) drawn++; });
  document.body.setAttribute("data-charts", String(svgs.length));
  document.body.setAttribute("data-charts-drawn", String(drawn));
})();
</script>
"#;

fn csv_tables(csv_text: &str) -> String {
    let mut out = String::new();
    let mut rdr = ::csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(csv_text.as_bytes());
    let mut in_table = false;
    let mut header_next = false;
    for row in rdr.records().flatten() {
        let cells: Vec<&str> = row.iter().collect();
        match cells.first().copied() {
            Some("wirebench results") => {}
            Some("constant") => {
                let _ = writeln!(
                    out,
                    "<p>Same in every case: {}</p>",
                    cells[1..]
                        .iter()
                        .map(|c| format!("<code>{}</code>", esc(c)))
                        .collect::<Vec<_>>()
                        .join(" ")
                );
            }
            Some("table") => {
                if in_table {
                    out.push_str("</table></div>\n");
                }
                let _ = writeln!(out, "<h3>{}</h3>", esc(&cells[1..].join(", ")));
                out.push_str("<div class=\"scroll\"><table>\n");
                in_table = true;
                header_next = true;
            }
            Some(_) if in_table => {
                out.push_str("<tr>");
                if header_next {
                    for c in &cells {
                        let _ = write!(out, "<th>{}</th>", esc(c));
                    }
                } else {
                    // metric, unit, then one value per column: shown in the unit's human
                    // form, the full value in the tooltip (it is in results.csv too).
                    let unit = cells.get(1).copied().unwrap_or("");
                    for (i, c) in cells.iter().enumerate() {
                        match c.parse::<f64>() {
                            Ok(v) if i >= 2 => {
                                let _ = write!(
                                    out,
                                    "<td class=\"num\" title=\"{}\">{}</td>",
                                    esc(c),
                                    esc(&human(v, unit))
                                );
                            }
                            _ if i >= 2 => {
                                let _ = write!(out, "<td class=\"num\">{}</td>", esc(c));
                            }
                            _ => {
                                let _ = write!(out, "<td>{}</td>", esc(c));
                            }
                        }
                    }
                }
                out.push_str("</tr>\n");
                header_next = false;
            }
            _ => {}
        }
    }
    if in_table {
        out.push_str("</table></div>\n");
    }
    out
}

fn facts(records: &[Record]) -> String {
    let mut s = String::from("<dl class=\"facts\">\n");
    let mut fact = |k: &str, v: String| {
        let _ = writeln!(s, "<dt>{}</dt><dd>{v}</dd>", esc(k));
    };
    if let Some(r) = records.first() {
        fact("started", esc(&r.started));
        fact("wirebench", esc(&r.wirebench));
        fact(
            "command",
            format!("<code>{}</code>", esc(&r.command.join(" "))),
        );
        let h = &r.host;
        fact(
            "host",
            esc(&format!("{} ({}, kernel {})", h.hostname, h.os, h.kernel)),
        );
        fact(
            "cpu",
            esc(&format!(
                "{} × {}, {:.1} GiB memory",
                h.cpus,
                h.cpu,
                h.memory_bytes as f64 / (1u64 << 30) as f64
            )),
        );
        fact("seed", r.seed.to_string());
    }
    let ok = records.iter().filter(|r| r.status == Status::Ok).count();
    let skipped = records
        .iter()
        .filter(|r| r.status == Status::Skipped)
        .count();
    let failed = records.len() - ok - skipped;
    let mut cases = if failed == 0 {
        format!("<span class=\"good\">{ok} ok</span>")
    } else {
        format!("{ok} ok, <span class=\"bad\">{failed} failed or interrupted</span>")
    };
    if skipped > 0 {
        cases.push_str(&format!(
            ", <span class=\"bad\">{skipped} skipped (a prerequisite missing)</span>"
        ));
    }
    fact("cases", cases);
    s.push_str("</dl>\n");
    s
}

fn cases_table(records: &[Record], lead: &[String], info: &RunInfo) -> String {
    let varying: Vec<String> = {
        crate::summary::label_names(records)
            .into_iter()
            // A link parameter some cases lack also tells cases apart (S2's link.delay:
            // 81ms against no link at all); others are missing where a workload does not
            // read them.
            .filter(|p| {
                records
                    .iter()
                    .filter(|r| r.labels.contains_key(p) || p.starts_with("link"))
                    .map(|r| r.labels.get(p).map(|v| v.to_string()))
                    .collect::<std::collections::BTreeSet<_>>()
                    .len()
                    > 1
            })
            .collect()
    };
    // The study's own metrics first (its lead figure's), then the usual headline ones.
    let mut metrics: Vec<&str> = lead.iter().map(String::as_str).collect();
    for (m, _) in charts::headline(info) {
        if !metrics.contains(&m) {
            metrics.push(m);
        }
    }
    metrics.retain(|m| records.iter().any(|r| r.metrics.contains_key(*m)));
    let repeated = records.iter().any(|r| r.repeat > 1);
    let mut s = String::from("<div class=\"scroll\"><table>\n<tr><th>case</th>");
    if repeated {
        s.push_str("<th>repeat</th>");
    }
    for p in &varying {
        let _ = write!(s, "<th>{}</th>", esc(p));
    }
    // The metric in words, with the name results.csv and results.jsonl use under it.
    for m in &metrics {
        let words = charts::words_of(m, info);
        let _ = write!(
            s,
            "<th>{}<br><span class=\"id\">{}</span></th>",
            esc(&words),
            esc(m)
        );
    }
    s.push_str("<th>status</th></tr>\n");
    for r in records {
        let failed = r.status != Status::Ok;
        let _ = write!(
            s,
            "<tr{}><td>{}</td>",
            if failed { " class=\"failed\"" } else { "" },
            r.case,
        );
        if repeated {
            let _ = write!(s, "<td>{}</td>", r.repeat);
        }
        for p in &varying {
            let v = r
                .labels
                .get(p)
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| v.to_string())
                })
                .unwrap_or_else(|| "-".into());
            let _ = write!(s, "<td>{}</td>", esc(&v));
        }
        for m in &metrics {
            let v = r
                .metric(m)
                .map(|x| human(x.value, &x.unit))
                .unwrap_or_else(|| "-".into());
            let _ = write!(s, "<td class=\"num\">{}</td>", esc(&v));
        }
        // The error as the run wrote it: it may hold a command to copy.
        let status = match (&r.status, &r.error) {
            (Status::Ok, _) => "ok".to_string(),
            (st, Some(e)) => format!("{}: {e}", format!("{st:?}").to_lowercase()),
            (st, None) => format!("{st:?}").to_lowercase(),
        };
        let _ = writeln!(s, "<td>{}</td></tr>", esc(&status));
    }
    s.push_str("</table></div>\n");
    s
}

/// Published figures beside ours, once per case (ours the mean of its runs, with their
/// range), then a warning for each run that stands far from its case's others.
fn published(records: &[Record], study: &[String]) -> String {
    let mut rows = String::new();
    let with_refs: Vec<&Record> = records
        .iter()
        .filter(|r| r.status == Status::Ok && !r.references.is_empty())
        .collect();
    // Only what differs between these rows; the rest is in "Same in every case" below.
    let differing = crate::summary::differing(&with_refs);
    let words = |r: &Record, names: &[String]| {
        r.labels
            .iter()
            .filter(|(k, _)| names.contains(k))
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(&v.to_string())))
            .collect::<Vec<_>>()
            .join(" ")
    };
    for p in crate::spread::published(records) {
        let _ = writeln!(
            rows,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            p.case,
            esc(&words(p.first, &differing)),
            esc(&p.metric),
            esc(&p.ours()),
            esc(&human(p.published, &p.unit)),
            esc(&p.ratio()),
            esc(&p.source)
        );
    }
    let ok: Vec<&Record> = records.iter().filter(|r| r.status == Status::Ok).collect();
    let all_differing = crate::summary::differing(&ok);
    let far = crate::spread::far_runs(records, study, |r| words(r, &all_differing));
    let mut warnings = String::new();
    if !far.is_empty() {
        warnings.push_str(
            "<p class=\"warn\">Runs that stand far from their case's others (a busy moment? \
             re-run the case):</p>\n<ul class=\"warn\">\n",
        );
        for f in &far {
            let _ = writeln!(warnings, "<li>{}</li>", esc(f));
        }
        warnings.push_str("</ul>\n");
    }
    if rows.is_empty() {
        return warnings;
    }
    format!(
        "<h2 id=\"published\">Published figures beside ours</h2>\n<div class=\"scroll\"><table>\n\
         <tr><th>case</th><th>parameters</th><th>metric</th><th>ours</th><th>published</th>\
         <th>ours / published</th><th>source</th></tr>\n{rows}</table></div>\n{warnings}"
    )
}

fn notes(records: &[Record]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for r in records {
        for n in &r.notes {
            // Link notes differ per case and are in the parameters already.
            if !n.starts_with("link up:") && !seen.contains(&n.as_str()) {
                seen.push(n);
            }
        }
    }
    if seen.is_empty() {
        return String::new();
    }
    let mut s = String::from("<h2 id=\"notes\">Notes</h2>\n<ul class=\"notes\">\n");
    for n in seen {
        let _ = writeln!(s, "<li>{}</li>", esc(n));
    }
    s.push_str("</ul>\n");
    s
}

/// Removes charts an earlier report wrote that this one does not (a rebuilt report may
/// number or choose its charts differently); only our own `NN-name.svg|png` files.
fn remove_stale_charts(chart_dir: &Path, planned: &[Planned]) -> Result<(), ReportError> {
    let entries = std::fs::read_dir(chart_dir).map_err(io_err(chart_dir))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let (Some(stem), Some(ext)) = (
            path.file_stem().and_then(|s| s.to_str()),
            path.extension().and_then(|s| s.to_str()),
        ) else {
            continue;
        };
        let ours = matches!(ext, "svg" | "png")
            && stem.len() > 3
            && stem.as_bytes()[..2].iter().all(u8::is_ascii_digit)
            && stem.as_bytes()[2] == b'-';
        if ours && !planned.iter().any(|p| p.stem == stem) {
            std::fs::remove_file(&path).map_err(io_err(&path))?;
        }
    }
    Ok(())
}

/// The metrics of the scenario's lead figures, in order: the study's own metric.
pub fn lead_metrics(info: &RunInfo) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in info
        .charts
        .iter()
        .filter(|c| c.lead && !c.metric.is_empty())
    {
        if !out.contains(&c.metric) {
            out.push(c.metric.clone());
        }
    }
    out
}

/// Writes `charts/*.svg`, `charts/*.png` and `report.html` into `dir`, treating metrics
/// and parameters as the protocols `declared`.
pub fn write_report(dir: &Path, declared: &crate::Declared) -> Result<Written, ReportError> {
    let records = read_records(dir)?;
    let mut info = RunInfo::read(dir).map_err(io_err(dir))?;
    info.declared = declared.clone();
    // The derived tables too: a run that crashed before writing them gets them here.
    let csv_opts = PivotOptions {
        tables: info.tables.clone(),
        metrics: info.columns.clone(),
    };
    crate::files::write_csv(dir, &records, &csv_opts).map_err(io_err(dir))?;
    let planned = charts::plan(&records, &info, dir);
    let chart_dir = dir.join("charts");
    std::fs::create_dir_all(&chart_dir).map_err(io_err(&chart_dir))?;
    remove_stale_charts(&chart_dir, &planned)?;
    let (mut lead_figures, mut figures) = (String::new(), String::new());
    for Planned {
        stem,
        chart,
        notes,
        lead,
    } in &planned
    {
        let figures = if *lead {
            &mut lead_figures
        } else {
            &mut figures
        };
        let svg = wirebench_chart::render_svg(chart);
        let svg_path = chart_dir.join(format!("{stem}.svg"));
        atomic_write(&svg_path, svg.as_bytes()).map_err(io_err(&svg_path))?;
        let png = wirebench_chart::render_png(chart, 2.0).map_err(|e| ReportError::Chart {
            stem: stem.clone(),
            message: e.to_string(),
        })?;
        let png_path = chart_dir.join(format!("{stem}.png"));
        atomic_write(&png_path, &png).map_err(io_err(&png_path))?;
        // Inline SVG: strip the XML declaration, which is not allowed inside HTML.
        let inline = match svg.strip_prefix("<?xml") {
            Some(rest) => rest.split_once("?>").map_or(rest, |(_, b)| b),
            None => &svg,
        };
        let notes: String = notes.iter().map(|n| format!("<br>{}", esc(n))).collect();
        let _ = writeln!(
            figures,
            "<figure class=\"chart\" id=\"{stem}\">{inline}<figcaption>{} · <a href=\"charts/{stem}.svg\">SVG</a> · <a href=\"charts/{stem}.png\">PNG</a>{notes}</figcaption></figure>",
            esc(&chart.title)
        );
    }
    let scenario = if info.scenario.is_empty() {
        records
            .first()
            .map(|r| r.scenario.clone())
            .unwrap_or_default()
    } else {
        info.scenario.clone()
    };
    let pivot_opts = PivotOptions {
        tables: info.tables.clone(),
        metrics: info.columns.clone(),
    };
    let mut html = head(&format!("wirebench · {scenario}"));
    let _ = writeln!(
        html,
        "<body>\n<h1>wirebench · {}</h1>\n<p class=\"lead\">{}</p>",
        esc(&scenario),
        esc(&info.description)
    );
    let study = crate::summary::study_metrics(&lead_metrics(&info), info.columns.as_deref());
    let published = published(&records, &study);
    let notes = notes(&records);
    // Only sections the page has: a link to a missing anchor goes nowhere.
    let mut nav = Vec::new();
    if !lead_figures.is_empty() {
        nav.push(("answer", "The study's figure"));
    }
    if published.contains("id=\"published\"") {
        nav.push(("published", "Published figures"));
    }
    nav.extend([
        ("charts", "Charts"),
        ("cases", "Cases"),
        ("tables", "Tables"),
    ]);
    if !notes.is_empty() {
        nav.push(("notes", "Notes"));
    }
    html.push_str("<nav>");
    for (id, words) in nav {
        let _ = write!(html, "<a href=\"#{id}\">{words}</a>");
    }
    html.push_str("</nav>\n");
    // The study's answer first (a report reads like its paper): its own figure, then the
    // published figures beside ours, then the facts of the run and every other chart.
    if !lead_figures.is_empty() {
        let _ = writeln!(html, "<h2 id=\"answer\">The study's figure</h2>");
        html.push_str(&lead_figures);
    }
    html.push_str(&published);
    html.push_str(&facts(&records));
    let _ = writeln!(html, "<h2 id=\"charts\">Charts</h2>");
    if planned.is_empty() {
        html.push_str("<p>No chart: fewer than two successful cases share a metric.</p>\n");
    } else if figures.is_empty() {
        html.push_str("<p>No other chart: the study's figure above is the only one.</p>\n");
    }
    html.push_str(&figures);
    let _ = writeln!(html, "<h2 id=\"cases\">Cases</h2>");
    html.push_str(&cases_table(&records, &study, &info));
    let _ = writeln!(
        html,
        "<h2 id=\"tables\">Tables</h2>\n<p>The same pivot as <a href=\"results.csv\">results.csv</a>; every record is in <a href=\"results.jsonl\">results.jsonl</a>.</p>"
    );
    html.push_str(&csv_tables(&pivot(&records, &pivot_opts)));
    html.push_str(&notes);
    html.push_str(SELF_CHECK);
    html.push_str("</body></html>\n");
    let path = dir.join("report.html");
    atomic_write(&path, html.as_bytes()).map_err(io_err(&path))?;
    Ok(Written {
        html: path,
        charts: planned.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A results directory from a real run's records and run.json (testdata/).
    fn report(jsonl: &str, run_json: &str) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("results.jsonl"), jsonl).unwrap();
        std::fs::write(dir.path().join("run.json"), run_json).unwrap();
        let written = write_report(dir.path(), &crate::Declared::default()).unwrap();
        let html = std::fs::read_to_string(written.html).unwrap();
        (dir, html)
    }

    fn default_report() -> (tempfile::TempDir, String) {
        report(
            include_str!("../testdata/default.jsonl"),
            include_str!("../testdata/default.run.json"),
        )
    }

    fn irc_report() -> (tempfile::TempDir, String) {
        report(
            include_str!("../testdata/satcom-irc.jsonl"),
            include_str!("../testdata/satcom-irc.run.json"),
        )
    }

    /// The values of `attr="..."` everywhere in the page.
    fn attrs<'a>(html: &'a str, attr: &str) -> Vec<&'a str> {
        let needle = format!(" {attr}=\"");
        html.match_indices(&needle)
            .filter_map(|(i, _)| html[i + needle.len()..].split('"').next())
            .collect()
    }

    #[test]
    fn every_in_page_link_has_its_anchor() {
        for (_dir, html) in [default_report(), irc_report()] {
            let ids = attrs(&html, "id");
            let links: Vec<&str> = attrs(&html, "href")
                .into_iter()
                .filter_map(|h| h.strip_prefix('#'))
                .collect();
            assert!(links.len() >= 3, "{links:?}");
            for l in links {
                assert!(ids.contains(&l), "#{l} has no id in the page");
            }
        }
        // The default run has neither published figures nor notes: no links to them.
        let (_dir, html) = default_report();
        assert!(!html.contains("href=\"#published\""));
        let (_dir, html) = irc_report();
        assert!(html.contains("href=\"#published\"") && html.contains("href=\"#notes\""));
    }

    /// Significant digits of a formatted cell: "0.000169" has 3, "1235s" 4.
    fn significant(cell: &str) -> usize {
        cell.chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == '-')
            .filter(char::is_ascii_digit)
            .skip_while(|c| *c == '0')
            .count()
    }

    #[test]
    fn table_numbers_are_human() {
        let (_dir, html) = irc_report();
        let cells: Vec<&str> = html
            .split("<td class=\"num\"")
            .skip(1)
            .filter_map(|c| c.split_once('>')?.1.split("</td>").next())
            .collect();
        assert!(cells.len() > 100, "{}", cells.len());
        for c in &cells {
            assert!(significant(c) <= 4, "raw number in a table: {c:?}");
            assert!(!c.contains("e-"), "{c:?}");
        }
        // The full value stays in the tooltip.
        assert!(
            html.contains("title=\"0.06039647\""),
            "raw value in the tooltip"
        );
        assert!(cells.contains(&"60.4ms"), "{cells:?}");
    }

    #[test]
    fn rebuilding_removes_charts_it_no_longer_draws() {
        let (dir, _) = default_report();
        let charts = dir.path().join("charts");
        for stale in ["05-rtt-p50-vs-payload.svg", "05-rtt-p50-vs-payload.png"] {
            std::fs::write(charts.join(stale), "old").unwrap();
        }
        std::fs::write(charts.join("mine.svg"), "a user's file").unwrap();
        let drawn = write_report(dir.path(), &crate::Declared::default())
            .unwrap()
            .charts;
        assert!(!charts.join("05-rtt-p50-vs-payload.svg").exists());
        assert!(!charts.join("05-rtt-p50-vs-payload.png").exists());
        assert!(charts.join("mine.svg").exists(), "not ours: kept");
        let n = std::fs::read_dir(&charts).unwrap().count();
        assert_eq!(
            n,
            2 * drawn + 1,
            "each chart as SVG and PNG, and the user's file"
        );
    }

    #[test]
    fn near_duplicate_charts_are_left_out_with_a_note() {
        let (dir, html) = default_report();
        // rtt.p50 equals rtt.stable (the median after the first two of 1000 rounds).
        let stems: Vec<String> = std::fs::read_dir(dir.path().join("charts"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(stems.iter().any(|s| s.contains("rtt-stable")), "{stems:?}");
        assert!(!stems.iter().any(|s| s.contains("rtt-p50")), "{stems:?}");
        assert!(
            html.contains("Median round trip (rtt.p50) is within 5% of this"),
            "the kept chart says why"
        );
        // Charts that differ are all drawn.
        assert!(stems.iter().any(|s| s.contains("rtt-first")), "{stems:?}");
        assert!(stems.iter().any(|s| s.contains("rtt-p99")), "{stems:?}");
    }
}
