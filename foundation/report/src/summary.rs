//! The table printed at the end of a run: one row per case (repeats averaged), the
//! parameters that vary, and the headline metrics in human units, fitted to the
//! terminal's width without ever breaking a word (see [`summary_table`]).

use crate::numbers;
use comfy_table::{
    Cell, CellAlignment, ColumnConstraint, ContentArrangement, Table, Width,
    presets::UTF8_FULL_CONDENSED,
};
use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::sync::LazyLock;
use wirebench_model::metric::MESSAGES_RECEIVED;
use wirebench_model::metric::connect::{CONNECT_PROXY, CONNECT_TCP, CONNECTS_PER_S, TTFB};
use wirebench_model::metric::{
    CONNECT_TIME, LOAD_FAILED, LOAD_LOGGED_IN, LOAD_LOGIN, LOAD_LOGINS_PER_S_MAX, LOAD_MESSAGE,
    LOAD_PEAK_ACTIVE, MESSAGES_CORRUPT, MESSAGES_LOST, RTT, RTT_FIRST, RTT_STABLE,
    THROUGHPUT_BITS_PER_S, THROUGHPUT_MESSAGES_PER_S, named,
};
use wirebench_model::session_words::SessionWords;
use wirebench_model::{Record, Status};

pub use crate::numbers::human;

/// The metrics a study is read by: those of its lead figures, then the concrete names of
/// its `[output] columns` (globs such as `throughput.*` are for the CSV, not here), at most
/// five.
pub fn study_metrics(lead: &[String], columns: Option<&[String]>) -> Vec<String> {
    let mut out: Vec<String> = lead.to_vec();
    for c in columns.unwrap_or_default() {
        if !c.contains('*') && !out.contains(c) {
            out.push(c.clone());
        }
    }
    out.truncate(5);
    out
}

/// Headline metrics, in display order, with their column titles.
static HEADLINE: LazyLock<Vec<(String, &str)>> = LazyLock::new(|| {
    named(&[
        (CONNECT_TIME.key(), "connect"),
        (RTT_FIRST.key(), "first RTT"),
        (RTT_STABLE.key(), "stable RTT"),
        (RTT.at("p50"), "p50"),
        (RTT.at("p99"), "p99"),
        (RTT.at("max"), "max"),
        (THROUGHPUT_BITS_PER_S.key(), "throughput"),
        (THROUGHPUT_MESSAGES_PER_S.key(), "messages/s"),
        (LOAD_LOGGED_IN.key(), "logged in"),
        (LOAD_FAILED.key(), "failed"),
        (LOAD_PEAK_ACTIVE.key(), "peak sessions"),
        (LOAD_LOGINS_PER_S_MAX.key(), "logins/s"),
        (LOAD_LOGIN.at("p99"), "login p99"),
        (LOAD_MESSAGE.at("p99"), "message p99"),
        (CONNECT_TCP.at("p50"), "TCP p50"),
        (CONNECT_PROXY.at("p50"), "proxy p50"),
        (TTFB.at("p50"), "TTFB p50"),
        (TTFB.at("p99"), "TTFB p99"),
        (CONNECTS_PER_S.key(), "conn/s"),
    ])
});

/// Metric columns given up when the table is too wide, first to go first. The median is
/// nearly the stable RTT (the median after the first two rounds); the maximum and the
/// connection time are the least read. What stays is the first and stable round trip
/// and the throughput, the figures the studies compare.
static DROP_ORDER: LazyLock<Vec<String>> = LazyLock::new(|| {
    [
        CONNECTS_PER_S.key(),
        CONNECT_TCP.at("p50"),
        LOAD_LOGINS_PER_S_MAX.key(),
        LOAD_PEAK_ACTIVE.key(),
        RTT.at("p50"),
        RTT.at("max"),
        CONNECT_TIME.key(),
        THROUGHPUT_MESSAGES_PER_S.key(),
        RTT.at("p99"),
    ]
    .iter()
    .map(|k| k.name().into_owned())
    .collect()
});

/// Width assumed when stdout is not a terminal and `COLUMNS` is not set: wide enough for
/// the default scenario's table, narrow enough for a log viewer.
pub const DEFAULT_WIDTH: usize = 100;

/// The width the summary should fit: `COLUMNS` when set to a number (so a user or a
/// script can choose), else the terminal's width when stdout is one, else
/// [`DEFAULT_WIDTH`].
pub fn terminal_width() -> usize {
    if let Some(n) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
    {
        return n;
    }
    if std::io::stdout().is_terminal() {
        if let Some((terminal_size::Width(w), _)) = terminal_size::terminal_size() {
            if w > 0 {
                return w as usize;
            }
        }
    }
    DEFAULT_WIDTH
}

/// Every label name of `records`, in order of first appearance.
pub(crate) fn label_names<'a>(records: impl IntoIterator<Item = &'a Record>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in records {
        for k in r.labels.keys() {
            if !names.contains(k) {
                names.push(k.clone());
            }
        }
    }
    names
}

fn label(r: &Record, p: &str) -> String {
    match r.labels.get(p).or_else(|| r.params.get(p)) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "-".into(),
    }
}

/// One column of the summary, ready to lay out.
struct Column {
    /// The header on one line.
    header: String,
    /// The same header stacked at word (and `.`) boundaries: "first\nRTT", "link.\ndelay".
    stacked: String,
    cells: Vec<String>,
    right: bool,
    /// The metric shown, for the note when the column is left out.
    metric: Option<String>,
}

impl Column {
    fn width(&self, stacked: bool) -> usize {
        let head = if stacked { &self.stacked } else { &self.header };
        head.lines()
            .chain(self.cells.iter().map(String::as_str))
            .map(|s| s.chars().count())
            .max()
            .unwrap_or(0)
    }
}

/// Splits a header into lines at spaces and after `.` ("link." over "delay"), so it never
/// breaks inside a word ("messages/s" stays whole).
fn stack(header: &str) -> String {
    let mut out = String::new();
    for ch in header.chars() {
        match ch {
            ' ' => out.push('\n'),
            '.' => {
                out.push(ch);
                out.push('\n');
            }
            c => out.push(c),
        }
    }
    out.trim_end_matches('\n').to_string()
}

/// Rendered width of a UTF8_FULL_CONDENSED table: a border before each column and after
/// the last, one space of padding each side.
fn table_width(cols: &[&Column], stacked: bool) -> usize {
    1 + cols.iter().map(|c| c.width(stacked) + 3).sum::<usize>()
}

fn render(cols: &[&Column], stacked: bool) -> String {
    let mut t = Table::new();
    // Widths are chosen here, so comfy-table must not wrap (it would split words).
    t.load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled);
    t.set_header(
        cols.iter()
            .map(|c| Cell::new(if stacked { &c.stacked } else { &c.header })),
    );
    let rows = cols.first().map_or(0, |c| c.cells.len());
    for i in 0..rows {
        t.add_row(cols.iter().map(|c| {
            let cell = Cell::new(&c.cells[i]);
            if c.right {
                cell.set_alignment(CellAlignment::Right)
            } else {
                cell
            }
        }));
    }
    t.to_string()
}

/// Packs the columns after the key column (the case number) into as few tables as fit
/// `width`, each starting with the key column so rows can be matched up.
fn stacked_tables(cols: &[&Column], width: usize) -> Vec<Vec<usize>> {
    let mut tables: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = vec![0];
    for i in 1..cols.len() {
        let mut trial: Vec<&Column> = current.iter().map(|&j| cols[j]).collect();
        trial.push(cols[i]);
        if current.len() > 1 && table_width(&trial, true) > width {
            tables.push(std::mem::replace(&mut current, vec![0, i]));
        } else {
            current.push(i);
        }
    }
    tables.push(current);
    tables
}

/// The end-of-run table, fitted to `width` columns (see [`terminal_width`]):
///
/// 1. parameters that are the same in every case and metrics no case has are left out;
/// 2. if the table is wider than `width`, metric columns are left out, those in
///    [`DROP_ORDER`] first, then the other headline metrics but the last one left
///    ([`fit_columns`]), until it fits, with a note naming them (they are in
///    results.csv); headers may be stacked on two or three lines at word boundaries
///    ("first" over "RTT") when that leaves out fewer columns;
/// 3. only if the parameters and what is left still do not fit are the columns split
///    into several tables, one under the other, each starting with the case number, the
///    first with the status beside it: the status is a column of the one table, never a
///    table of its own.
///
/// Cells are never wrapped, so no word is ever split; only a single value wider than the
/// whole terminal can make a line longer than `width`.
pub fn summary_table(records: &[Record], width: usize) -> String {
    summary_table_with(records, width, &[], SessionWords::LOGIN)
}

/// [`summary_table`] with the study's own metrics (`s2.total`, `ttfb.p85`) as its first
/// metric columns, kept whatever the width (see [`study_metrics`]).
/// A headline column's title in the words of the cases' sessions.
fn worded(metric: &str, title: &str, w: SessionWords) -> String {
    if LOAD_LOGGED_IN.key().is(metric) {
        w.up.to_string()
    } else if LOAD_LOGINS_PER_S_MAX.key().is(metric) {
        format!("{}/s", w.events)
    } else if LOAD_LOGIN.at("p99").is(metric) {
        format!("{} p99", w.event)
    } else {
        title.to_string()
    }
}

/// The load columns say what the cases' sessions call being up (`words`, from
/// [`crate::info::Declared::session_words_of`]).
pub fn summary_table_with(
    records: &[Record],
    width: usize,
    study: &[String],
    words: SessionWords,
) -> String {
    let params: Vec<String> = {
        let mut seen: Vec<String> = Vec::new();
        for k in records.iter().flat_map(|r| r.params.keys()) {
            if !seen.contains(k) {
                seen.push(k.clone());
            }
        }
        seen.into_iter()
            .filter(|p| {
                records
                    .iter()
                    .filter(|r| r.params.contains_key(p.as_str()) || p.starts_with("link"))
                    .map(|r| label(r, p))
                    .collect::<BTreeSet<_>>()
                    .len()
                    > 1
            })
            .collect()
    };
    let cases: Vec<usize> = records
        .iter()
        .map(|r| r.case)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let column = |header: &str, right: bool, metric: Option<String>| Column {
        header: header.to_string(),
        stacked: stack(header),
        cells: Vec::new(),
        right,
        metric,
    };
    let mut case_col = column("case", true, None);
    let mut param_cols: Vec<Column> = params.iter().map(|p| column(p, false, None)).collect();
    // The study's own metrics first (never left out to fit), then the usual headline.
    let mut metric_cols: Vec<Column> = study
        .iter()
        .map(|m| column(m, true, Some(m.clone())))
        .collect();
    metric_cols.extend(
        HEADLINE
            .iter()
            .filter(|(m, _)| !study.iter().any(|s| s == m))
            .map(|(m, title)| column(&worded(m, title, words), true, Some(m.to_string()))),
    );
    let mut status_col = column("status", false, None);
    for &case in &cases {
        let reps: Vec<&Record> = records.iter().filter(|r| r.case == case).collect();
        let ok: Vec<&Record> = reps
            .iter()
            .copied()
            .filter(|r| r.status == Status::Ok)
            .collect();
        // A case interrupted part-way shows what its finished rounds measured (its
        // status says so) rather than nothing.
        let partial: Vec<&Record> = reps
            .iter()
            .copied()
            .filter(|r| r.status == Status::Interrupted && !r.metrics.is_empty())
            .collect();
        let shown = if ok.is_empty() { &partial } else { &ok };
        case_col.cells.push(case.to_string());
        for (col, p) in param_cols.iter_mut().zip(&params) {
            col.cells.push(label(reps[0], p));
        }
        for col in &mut metric_cols {
            let m = col.metric.clone().unwrap_or_default();
            let vals: Vec<(f64, String)> = shown
                .iter()
                .filter_map(|r| r.metric(&m))
                .filter(|x| x.value.is_finite())
                .map(|x| (x.value, x.unit))
                .collect();
            col.cells.push(if vals.is_empty() {
                String::new()
            } else {
                let mean = vals.iter().map(|v| v.0).sum::<f64>() / vals.len() as f64;
                human(mean, &vals[0].1)
            });
        }
        status_col.cells.push(status(&reps, &ok));
    }
    // A metric no case has would be an empty column.
    metric_cols.retain(|c| c.cells.iter().any(|s| !s.is_empty()));
    let mut columns: Vec<Column> = vec![case_col];
    columns.extend(param_cols);
    columns.extend(metric_cols);
    columns.push(status_col);

    let all: Vec<&Column> = columns.iter().collect();
    let (one_line, stacked_fit) = (
        fit_columns(&all, width, false, study),
        fit_columns(&all, width, true, study),
    );
    // Whichever leaves out fewer columns; on a tie, headers on one line read better.
    let one_line_fits = table_width(&one_line.0, false) <= width;
    let (mut shown, dropped, stacked) = if one_line_fits && one_line.1.len() <= stacked_fit.1.len()
    {
        (one_line.0, one_line.1, false)
    } else {
        (stacked_fit.0, stacked_fit.1, true)
    };
    if dropped.is_empty() && !stacked {
        return render(&shown, false);
    }
    let mut out = if table_width(&shown, stacked) <= width {
        render(&shown, stacked)
    } else {
        // Beside the case number, so that no table is left holding the status alone.
        let status = shown.pop().expect("the status column");
        shown.insert(1, status);
        stacked_tables(&shown, width)
            .into_iter()
            .map(|t| render(&t.iter().map(|&i| shown[i]).collect::<Vec<_>>(), true))
            .collect::<Vec<_>>()
            .join("\n")
    };
    if !dropped.is_empty() {
        out.push('\n');
        out.push_str(&wrap_words(
            &format!(
                "Left out to fit {width} columns (see results.csv): {}",
                dropped.join(", ")
            ),
            width,
        ));
    }
    out
}

/// The columns of one table that fits `width` (headers `stacked` or on one line), and the
/// metrics left out for it: first those in [`DROP_ORDER`], then the other headline metrics
/// from the last; never the study's own, nor the last metric column left. Only a table
/// still too wide after that is split ([`stacked_tables`]).
fn fit_columns<'a>(
    all: &[&'a Column],
    width: usize,
    stacked: bool,
    study: &[String],
) -> (Vec<&'a Column>, Vec<&'static str>) {
    let mut shown = all.to_vec();
    let mut dropped = Vec::new();
    let rest = HEADLINE.iter().rev().map(|(m, _)| m);
    for m in DROP_ORDER
        .iter()
        .chain(rest.filter(|m| !DROP_ORDER.contains(m)))
    {
        let metrics = shown.iter().filter(|c| c.metric.is_some()).count();
        if table_width(&shown, stacked) <= width || metrics <= 1 {
            break;
        }
        if study.iter().any(|s| s == m) {
            continue;
        }
        if let Some(i) = shown.iter().position(|c| c.metric.as_ref() == Some(m)) {
            shown.remove(i);
            dropped.push(m.as_str());
        }
    }
    (shown, dropped)
}

/// Breaks text into lines of at most `width` characters at spaces (a single word longer
/// than that keeps its own line whole).
fn wrap_words(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in text.split(' ') {
        let n = word.chars().count();
        if line > 0 && line + 1 + n > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += n;
    }
    out
}

/// Lets comfy-table wrap `t` to `width`, but only at spaces: each column is at least as
/// wide as its longest word, so a word is never split (the table may then be wider than
/// `width`, which is better than "pingpon|g").
pub fn wrap_at_words(t: &mut Table, width: usize) {
    t.set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(width.min(u16::MAX as usize) as u16);
    let columns = t.column_count();
    let longest: Vec<u16> = (0..columns)
        .map(|i| {
            t.column_cells_with_header_iter(i)
                .flatten()
                .flat_map(|c| {
                    // comfy-table breaks lines at ' ' only (not at no-break spaces).
                    c.content().split(' ').map(|w| w.chars().count()).max()
                })
                .max()
                .unwrap_or(1)
                // The bound includes the cell's padding, one space each side.
                .saturating_add(2)
                .min(u16::MAX as usize) as u16
        })
        .collect();
    t.set_constraints(
        longest
            .into_iter()
            .map(|w| ColumnConstraint::LowerBoundary(Width::Fixed(w))),
    );
}

/// "ok", "ok x5", "ok, 3 lost" or "1/3 ok, failed": lost and corrupt messages go here
/// rather than in a column that is 0 in nearly every run.
fn status(reps: &[&Record], ok: &[&Record]) -> String {
    if let [r] = reps {
        if r.status == Status::Interrupted {
            // Rounds are a ping-pong's; a load's progress is its sessions' column.
            let pingpong = r.params.get("workload").and_then(|w| w.as_str()) == Some("pingpong");
            return match r.get(MESSAGES_RECEIVED) {
                Some(n) if pingpong => format!("interrupted after {} rounds", n.value),
                _ => "interrupted".into(),
            };
        }
    }
    let mut s = if ok.len() == reps.len() {
        if reps.len() > 1 {
            format!("ok x{}", reps.len())
        } else {
            "ok".into()
        }
    } else {
        let failed: BTreeSet<String> = reps
            .iter()
            .filter(|r| r.status != Status::Ok)
            .map(|r| format!("{:?}", r.status).to_lowercase())
            .collect();
        format!(
            "{}/{} ok, {}",
            ok.len(),
            reps.len(),
            failed.into_iter().collect::<Vec<_>>().join(",")
        )
    };
    for (metric, word) in [(MESSAGES_LOST, "lost"), (MESSAGES_CORRUPT, "corrupt")] {
        let n: f64 = ok
            .iter()
            .filter_map(|r| r.get(metric))
            .map(|x| x.value)
            .filter(|v| v.is_finite())
            .sum();
        if n > 0.0 {
            s.push_str(&format!(", {} {word}", numbers::sig3(n)));
        }
    }
    s
}

fn case_label(r: &Record, skip: &str) -> String {
    r.labels
        .iter()
        .filter(|(k, _)| k.as_str() != skip)
        .map(|(k, v)| {
            format!(
                "{k}={}",
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Least-squares line through (x, y): (intercept, slope).
pub fn fit(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |a, p| (a.0 + p.0, a.1 + p.1));
    let (mx, my) = (sx / n, sy / n);
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = sxy / sxx;
    Some((my - slope * mx, slope))
}

/// The parameters (by their labels) whose values differ between `records`, in order of
/// first appearance. A parameter only some records have (rounds for ping-pong, count
/// for streams) is not a difference by itself.
pub(crate) fn differing(records: &[&Record]) -> Vec<String> {
    label_names(records.iter().copied())
        .into_iter()
        // A link parameter some records lack tells them apart too (no link against
        // 81ms); any other is missing because the case's workload does not read it.
        .filter(|p| {
            records
                .iter()
                .filter(|r| r.labels.contains_key(p.as_str()) || p.starts_with("link"))
                .map(|r| label(r, p))
                .collect::<BTreeSet<_>>()
                .len()
                > 1
        })
        .collect()
}

/// "Published figures beside ours", one row per case and metric; empty without any.
fn published_table(records: &[Record], ok: &[&Record], width: usize) -> String {
    let mut out = String::new();
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "case",
        "parameters",
        "metric",
        "ours",
        "published",
        "ours /\npublished",
        "source",
    ]);
    let mut rows = 0;
    let mut repeated = false;
    // Only what differs between the rows; the rest is the same for all of them.
    let with_refs: Vec<&Record> = ok
        .iter()
        .copied()
        .filter(|r| !r.references.is_empty())
        .collect();
    let differing = differing(&with_refs);
    // One row per case and metric: ours is the mean of the case's runs, with their range.
    for p in crate::spread::published(records) {
        let r = p.first;
        t.add_row(vec![
            Cell::new(p.case.to_string()),
            Cell::new(
                differing
                    .iter()
                    .filter(|d| r.labels.contains_key(d.as_str()))
                    .map(|d| format!("{d}={}", label(r, d)))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            Cell::new(&p.metric),
            // The range on a line of its own (the title says so): no word to break.
            Cell::new(match p.ours_range() {
                Some(range) => format!("{}\n{range}", human(p.mean(), &p.unit)),
                None => human(p.mean(), &p.unit),
            })
            .set_alignment(CellAlignment::Right),
            Cell::new(human(p.published, &p.unit)).set_alignment(CellAlignment::Right),
            Cell::new(p.ratio().replacen(" (", "\n", 1).replace(')', ""))
                .set_alignment(CellAlignment::Right),
            Cell::new(&p.source),
        ]);
        rows += 1;
        repeated |= p.runs.len() > 1;
    }
    if rows > 0 {
        wrap_at_words(&mut t, width);
        out.push_str(if repeated {
            "Published figures beside ours (ours: the mean of the case's runs, their range \
             under it):\n"
        } else {
            "Published figures beside ours:\n"
        });
        out.push_str(&t.to_string());
        out.push('\n');
    }
    out
}

/// The runs far from their case's others ([`crate::spread::far_runs`]), a few lines.
fn far_warnings(records: &[Record], ok: &[&Record], study: &[String]) -> String {
    let mut out = String::new();
    let all_differing = self::differing(ok);
    let far = crate::spread::far_runs(records, study, |r| {
        all_differing
            .iter()
            .filter(|p| r.labels.contains_key(p.as_str()))
            .map(|p| format!("{p}={}", label(r, p)))
            .collect::<Vec<_>>()
            .join(" ")
    });
    if !far.is_empty() {
        out.push_str(
            "Runs that stand far from their case's others (a busy moment? re-run the case):\n",
        );
        // A few lines here; report.html lists them all.
        const SHOWN: usize = 5;
        for f in far.iter().take(SHOWN) {
            out.push_str(&format!("  warning: {f}\n"));
        }
        if far.len() > SHOWN {
            out.push_str(&format!(
                "  ... and {} more (report.html lists them all)\n",
                far.len() - SHOWN
            ));
        }
    }
    out
}

/// Published figures beside ours, and how round trips grow with the link's delay
/// (study S1's laws: stable RTT grows by 2 x delay; a first RTT that grows by k x delay
/// implies about k/2 round trips of set-up). Where the references cover several delays,
/// their own line is fitted too, so the two slopes can be compared directly. Then a
/// warning for each run of a `study` metric or a published one that stands far from
/// its case's other runs ([`crate::spread::far_runs`]). Tables are fitted to `width` columns without splitting words, as far as the longest
/// words allow.
pub fn comparisons(records: &[Record], study: &[String], width: usize) -> String {
    let ok: Vec<&Record> = records.iter().filter(|r| r.status == Status::Ok).collect();
    let mut out = published_table(records, &ok, width);
    out.push_str(&far_warnings(records, &ok, study));
    // Groups of cases that differ only in link.delay.
    let mut groups: Vec<(String, Vec<&Record>)> = Vec::new();
    for r in ok.iter().filter(|r| r.params.contains_key("link.delay")) {
        let key = case_label(r, "link.delay");
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    // Each group is named by what differs between the groups drawn, not by every
    // parameter (the rest is the same for all).
    let fitted: Vec<&Record> = groups
        .iter()
        .filter(|(_, rs)| {
            rs.iter()
                .map(|r| label(r, "link.delay"))
                .collect::<BTreeSet<_>>()
                .len()
                >= 2
        })
        .flat_map(|(_, rs)| rs.iter().copied())
        .collect();
    let naming: Vec<String> = self::differing(&fitted)
        .into_iter()
        .filter(|p| p != "link.delay")
        .collect();
    let mut fits = String::new();
    for (_, rs) in &groups {
        let key = naming
            .iter()
            .filter(|p| rs[0].labels.contains_key(p.as_str()))
            .map(|p| format!("{p}={}", label(rs[0], p)))
            .collect::<Vec<_>>()
            .join(" ");
        let key = if key.is_empty() {
            "all cases".into()
        } else {
            key
        };
        let delays: BTreeSet<String> = rs.iter().map(|r| label(r, "link.delay")).collect();
        if delays.len() < 2 {
            continue;
        }
        let mut parts = Vec::new();
        // A connect case's time to first byte and its proxy's share: study S3's round
        // trips per handshake, read off the slope.
        for key in [
            RTT_FIRST.key(),
            RTT_STABLE.key(),
            TTFB.at("p50"),
            CONNECT_PROXY.at("p50"),
        ] {
            let metric = &*key.name();
            let delay = |r: &Record| r.params.get("link.delay")?.as_f64();
            let ours: Vec<(f64, f64)> = rs
                .iter()
                .filter_map(|r| Some((delay(r)?, r.get(key)?.value)))
                .collect();
            let published: Vec<(f64, f64)> = rs
                .iter()
                .filter_map(|r| Some((delay(r)?, r.references.get(metric)?["value"].as_f64()?)))
                .collect();
            if let Some((a, b)) = fit(&ours) {
                let mut line = format!(
                    "{metric} = {} + {b:.2} x delay (~{:.1} round trips)",
                    human(a, "s"),
                    b / 2.0
                );
                if let Some((pa, pb)) = fit(&published) {
                    line.push_str(&format!(
                        ", published {} + {pb:.2} x delay (~{:.1})",
                        human(pa, "s"),
                        pb / 2.0
                    ));
                }
                parts.push(line);
            }
        }
        if !parts.is_empty() {
            fits.push_str(&format!("  {key}:\n    {}\n", parts.join("\n    ")));
        }
    }
    if !fits.is_empty() {
        out.push_str("Growth with the link's one-way delay (least squares):\n");
        out.push_str(&fits);
    }
    out
}

#[cfg(test)]
mod fit_tests {
    #[test]
    fn line_through_points() {
        let (a, b) = super::fit(&[(0.0, 36.3), (0.5, 57.0), (1.0, 78.5)]).unwrap();
        assert!((b - 42.2).abs() < 0.01, "{b}");
        assert!((a - 36.22).abs() < 0.1, "{a}");
        assert!(super::fit(&[(1.0, 2.0)]).is_none());
        assert!(super::fit(&[(1.0, 2.0), (1.0, 3.0)]).is_none());
    }
}

#[cfg(test)]
mod comparison_tests {
    use wirebench_model::Record;

    fn record(case: usize, delay: f64, label: &str, first: f64, published: f64) -> Record {
        serde_json::from_value(serde_json::json!({
            "schema": 1, "scenario": "s", "case": case, "repeat": 1, "status": "ok",
            "params": {"link.delay": delay, "payload": 2},
            "labels": {"link.delay": label, "payload": "2"},
            "metrics": {"rtt.first": {"value": first, "unit": "s"}},
            "references": {"rtt.first": {"value": published, "source": "S1 standard S2S"}},
            "seed": 1, "started": "", "wirebench": "0", "command": [],
            "host": {"hostname": "", "os": "", "kernel": "", "cpu": "", "cpus": 1, "memory_bytes": 0}
        }))
        .unwrap()
    }

    #[test]
    fn published_figures_once_per_case_with_the_mean_of_its_repeats() {
        let mut again = record(1, 0.0, "0", 17.0, 36.3);
        again.repeat = 2;
        let rs = vec![record(1, 0.0, "0", 15.0, 36.3), again];
        let out = super::comparisons(&rs, &[], 160);
        assert_eq!(out.matches("S1 standard S2S").count(), 1, "{out}");
        assert!(out.contains("16s ┆") && out.contains("15s-17s ┆"), "{out}");
        assert!(
            out.contains("0.441 ┆") && out.contains("0.413-0.468 ┆"),
            "{out}"
        );
        assert!(
            out.contains("the mean of the case's runs, their range"),
            "{out}"
        );
        assert!(!out.contains(" r1 ") && !out.contains(" r2 "), "{out}");
    }

    #[test]
    fn published_figures_and_both_slopes() {
        let rs = vec![
            record(1, 0.0, "0", 15.0, 36.3),
            record(2, 0.5, "500ms", 22.1, 57.0),
            record(3, 1.0, "1s", 31.1, 78.5),
        ];
        let out = super::comparisons(&rs, &[], 100);
        assert!(out.contains("Published figures beside ours"), "{out}");
        assert!(out.contains("S1 standard S2S"), "{out}");
        // 15.0 / 36.3
        assert!(out.contains("0.41"), "{out}");
        assert!(out.contains("+ 16.10 x delay (~8.1 round trips)"), "{out}");
        assert!(
            out.contains("published 36.2s + 42.20 x delay (~21.1)"),
            "{out}"
        );
    }
}

#[cfg(test)]
mod table_tests {
    use super::*;

    fn records(jsonl: &str) -> Vec<Record> {
        jsonl
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// `wirebench run` with the default scenario on loopback.
    fn default_run() -> Vec<Record> {
        records(include_str!("../testdata/default.jsonl"))
    }

    /// `wirebench run satcom-irc --rounds 3 --link-rate 19200bit`: link.delay varies in
    /// one part only, stream cases have no round trips.
    fn satcom_irc() -> Vec<Record> {
        records(include_str!("../testdata/satcom-irc.jsonl"))
    }

    /// Study S1's XMPP run kept in docs/runs: five parameters vary.
    fn satcom_xmpp() -> Vec<Record> {
        records(include_str!(
            "../../../docs/runs/satcom-xmpp-2026-11-21/results.jsonl"
        ))
    }

    /// The text of every cell, header lines included.
    fn cells(table: &str) -> Vec<String> {
        table
            .lines()
            .filter(|l| l.starts_with('│'))
            .flat_map(|l| {
                l.split(['│', '┆'])
                    .map(|c| c.trim().to_string())
                    .filter(|c| !c.is_empty())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Every cell of a narrow table must be a whole cell (or a whole header line) of the
    /// unconstrained one: nothing was cut or wrapped mid-word.
    fn assert_fits_unbroken(records: &[Record], width: usize) -> String {
        let wide = summary_table(records, 10_000);
        let mut whole: Vec<String> = cells(&wide);
        whole.extend(
            HEADLINE
                .iter()
                .map(|(_, t)| *t)
                .chain(["case", "status"])
                .chain(
                    records
                        .iter()
                        .flat_map(|r| r.params.keys().map(String::as_str)),
                )
                .flat_map(|h| stack(h).lines().map(str::to_string).collect::<Vec<_>>()),
        );
        let t = summary_table(records, width);
        for line in t.lines() {
            assert!(
                line.chars().count() <= width,
                "wider than {width}: {line:?}\n{t}"
            );
        }
        for c in cells(&t) {
            assert!(whole.contains(&c), "{c:?} is not a whole cell:\n{t}");
        }
        t
    }

    #[test]
    fn default_run_fits_80_and_120_columns() {
        let rs = default_run();
        let wide = summary_table(&rs, 10_000);
        assert!(wide.lines().all(|l| l.chars().count() > 120), "{wide}");
        for width in [80, 120] {
            let t = assert_fits_unbroken(&rs, width);
            assert!(t.contains("pingpong") && t.contains("64KiB"), "{t}");
            // The figures that matter stay.
            for head in ["first", "stable", "throughput"] {
                assert!(t.contains(head), "{head} missing at {width}:\n{t}");
            }
            // Constant parameters and the empty lost/corrupt column are gone.
            assert!(!t.contains("rounds") && !t.contains("lost"), "{t}");
        }
        let t = summary_table(&rs, 80);
        assert!(
            t.contains("Left out to fit 80 columns (see results.csv): rtt.p50"),
            "{t}"
        );
        assert_eq!(t.matches("┌").count(), 1, "one table at 80: {t}");
        let t = summary_table(&rs, 120);
        assert!(!t.contains("Left out"), "everything fits 120 stacked: {t}");
    }

    #[test]
    fn satcom_irc_fits_and_shows_the_delay() {
        let rs = satcom_irc();
        for width in [80, 120] {
            let t = assert_fits_unbroken(&rs, width);
            for delay in ["500ms", "1s"] {
                assert!(t.contains(delay), "{t}");
            }
            assert!(t.contains("delay"), "{t}");
        }
    }

    #[test]
    fn many_parameters_stack_into_several_tables() {
        let rs = satcom_xmpp();
        let t = assert_fits_unbroken(&rs, 60);
        assert!(t.matches("┌").count() >= 2, "{t}");
        // Every table starts with the case number, so rows can be matched up.
        assert_eq!(t.matches("│ case").count(), t.matches("┌").count(), "{t}");
        assert_fits_unbroken(&rs, 80);
        assert_fits_unbroken(&rs, 120);
    }

    /// However narrow, the status is a column of the first table: it never has a table of
    /// its own that repeats every case for it.
    #[test]
    fn the_status_is_a_column_of_the_one_table() {
        for rs in [default_run(), satcom_irc(), satcom_xmpp()] {
            for width in 40..=160 {
                let t = summary_table(&rs, width);
                let tables: Vec<&str> = t.split('┌').skip(1).collect();
                let first_header = tables[0].lines().nth(1).unwrap_or_default();
                assert!(first_header.contains("status"), "at {width}:\n{t}");
                for table in &tables {
                    let heads = cells(&format!("┌{table}"));
                    assert!(
                        heads.len() > 2,
                        "a table of case and status at {width}:\n{t}"
                    );
                }
            }
        }
        // Metrics are left out before a table is split: one table down to 80 columns
        // where the parameters fit (satcom-xmpp's eight do not).
        for rs in [default_run(), satcom_irc()] {
            let t = summary_table(&rs, 80);
            assert_eq!(t.matches('┌').count(), 1, "{t}");
        }
    }

    #[test]
    fn lost_messages_and_failures_in_the_status() {
        let mut rs = default_run();
        rs[0].metrics.insert(
            "messages.lost".into(),
            serde_json::json!({"value": 3.0, "unit": "count"}),
        );
        rs[1].status = Status::Failed;
        let t = summary_table(&rs, 200);
        assert!(t.contains("ok, 3 lost"), "{t}");
        assert!(t.contains("0/1 ok, failed"), "{t}");
    }
}

#[cfg(test)]
mod published_width_tests {
    #[test]
    fn published_table_never_splits_a_word() {
        let rs: Vec<wirebench_model::Record> = include_str!("../testdata/satcom-irc.jsonl")
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        for width in [80, 120] {
            let out = super::comparisons(&rs, &[], width);
            for word in [
                "wire.stable.overhead_per_message",
                "workload=pingpong",
                "per-message",
                "irc.link_setup",
            ] {
                assert!(out.contains(word), "{word} split at {width}:\n{out}");
            }
            // Only what differs between the rows with published figures.
            assert!(
                !out.contains("rounds=") && !out.contains("protocol="),
                "{out}"
            );
        }
    }
}
