//! Scenario files (TOML) and command-line overrides, both producing a [`Scenario`].
//!
//! ```toml
//! name = "payload-sweep"
//! description = "..."
//! [params]            # any value may be a list: it becomes an axis, in the order written
//! mode = ["oneway", "echo"]
//! payload = [100, "10KiB", "1MiB"]
//! [run]
//! repeat = 3
//! seed = 1
//! [output]
//! tables = ["mode"]
//! columns = ["throughput.*"]
//! ```
//!
//! Every error names the file, line and key (`file.toml:7: params.payload: ...`), and an
//! unknown key lists the valid ones. The format is documented in `docs/scenarios.md`.

use crate::params::{self, spec};
use std::fmt;
use std::path::Path;
use std::time::Duration;
use toml_edit::{Document, Item, Table, TableLike, Value};
use wirebench_model::{Grid, ParamValue, parse_duration};
use wirebench_report::ChartSpec;

/// Built-in scenarios, by name.
pub const BUILTIN: &[(&str, &str)] = &[
    ("default", include_str!("../../../scenarios/default.toml")),
    ("latency", include_str!("../../../scenarios/latency.toml")),
    (
        "payload-sweep",
        include_str!("../../../scenarios/payload-sweep.toml"),
    ),
    (
        "satcom-xmpp",
        include_str!("../../../scenarios/satcom-xmpp.toml"),
    ),
    (
        "satcom-irc",
        include_str!("../../../scenarios/satcom-irc.toml"),
    ),
];

#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub grid: Grid,
    pub repeat: u32,
    pub seed: u64,
    /// A case with no progress for this long fails.
    pub stall_timeout: Duration,
    pub tables: Option<Vec<String>>,
    pub columns: Option<Vec<String>>,
    /// Sub-grids (`[[part]]`): each overrides some of the base parameters; the cases
    /// are the union of the parts' cases. Empty: the base grid alone.
    pub parts: Vec<Part>,
    /// Published figures to print beside ours (`[[reference]]`).
    pub references: Vec<Reference>,
    /// Charts for the report (`[[chart]]`); empty: chosen from the grid's shape.
    pub charts: Vec<ChartSpec>,
}

/// One `[[part]]` of a scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub name: String,
    pub grid: Grid,
}

/// A published figure: for cases whose parameters match `when`, `metrics` are the
/// reference values (in the metric's unit), attributed to `source`.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    pub source: String,
    pub when: Vec<(String, ParamValue)>,
    pub metrics: Vec<(String, f64)>,
}

/// A scenario mistake, located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// File name, or `command line`.
    pub origin: String,
    pub line: Option<usize>,
    /// Dotted key (`params.payload`), if the problem belongs to one.
    pub key: Option<String>,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.origin)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if let Some(k) = &self.key {
            write!(f, ": {k}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// Suggests the closest valid name, if any is close.
fn did_you_mean(word: &str, valid: &[&str]) -> String {
    match wirebench_model::hint::closest(word, valid.iter().copied()) {
        Some(v) => format!(" (did you mean `{v}`?)"),
        None => String::new(),
    }
}

struct Ctx<'a> {
    origin: &'a str,
    text: &'a str,
}

impl Ctx<'_> {
    fn line_of(&self, span: Option<std::ops::Range<usize>>) -> Option<usize> {
        span.map(|s| {
            self.text[..s.start.min(self.text.len())]
                .matches('\n')
                .count()
                + 1
        })
    }
    fn err(
        &self,
        span: Option<std::ops::Range<usize>>,
        key: &str,
        msg: impl Into<String>,
    ) -> ScenarioError {
        ScenarioError {
            origin: self.origin.to_string(),
            line: self.line_of(span),
            key: (!key.is_empty()).then(|| key.to_string()),
            message: msg.into(),
        }
    }
}

fn item_span(item: &Item) -> Option<std::ops::Range<usize>> {
    item.span()
        .or_else(|| item.as_table().and_then(|t| t.span()))
}

impl Scenario {
    /// Parameter defaults only: one case per workload default.
    pub fn empty(name: &str) -> Scenario {
        Scenario {
            name: name.to_string(),
            description: String::new(),
            grid: Grid::default(),
            repeat: 1,
            seed: 1,
            stall_timeout: Duration::from_secs(30),
            tables: None,
            columns: None,
            parts: Vec::new(),
            charts: Vec::new(),
            references: Vec::new(),
        }
    }

    pub fn builtin(name: &str) -> Option<Scenario> {
        BUILTIN.iter().find(|(n, _)| *n == name).map(|(n, text)| {
            Scenario::parse(text, &format!("built-in scenario {n}"))
                .unwrap_or_else(|e| panic!("built-in scenario {n} is invalid: {e}"))
        })
    }

    pub fn from_file(path: &Path) -> Result<Scenario, ScenarioError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            origin: origin.clone(),
            line: None,
            key: None,
            message: format!("cannot read: {e}"),
        })?;
        Scenario::parse(&text, &origin)
    }

    pub fn parse(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        let cx = Ctx { origin, text };
        let doc = Document::parse(text).map_err(|e| {
            let msg = e.message().trim().to_string();
            cx.err(e.span(), "", format!("not valid TOML: {msg}"))
        })?;
        let root = doc.as_table();
        let default_name = Path::new(origin)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("scenario");
        let mut sc = Scenario::empty(default_name);
        for (key, item) in root.iter() {
            let span = item_span(item).or_else(|| root.key(key).and_then(|k| k.span()));
            match key {
                "name" => sc.name = string(&cx, item, key)?,
                "description" => sc.description = string(&cx, item, key)?,
                "params" => parse_params(&cx, table(&cx, item, key)?, "params", &mut sc.grid)?,
                "part" => parse_parts(&cx, item, &mut sc)?,
                "reference" => parse_references(&cx, item, &mut sc)?,
                "chart" => parse_charts(&cx, item, &mut sc)?,
                "run" => parse_run(&cx, table(&cx, item, key)?, &mut sc)?,
                "output" => parse_output(&cx, table(&cx, item, key)?, &mut sc)?,
                other => {
                    let valid = [
                        "name",
                        "description",
                        "params",
                        "part",
                        "reference",
                        "chart",
                        "run",
                        "output",
                    ];
                    let hint = if spec(other).is_some() {
                        format!(" (parameters go under [params]: `[params]` then `{other} = ...`)")
                    } else {
                        did_you_mean(other, &valid)
                    };
                    return Err(cx.err(
                        span,
                        other,
                        format!("unknown key{hint}; valid keys: {}", valid.join(", ")),
                    ));
                }
            }
        }
        Ok(sc)
    }

    /// Sets a parameter from command-line text: a comma-separated list of values.
    pub fn set_param(&mut self, name: &str, text: &str) -> Result<(), ScenarioError> {
        let cx = Ctx {
            origin: "command line",
            text: "",
        };
        let key = format!("--{}", name.replace('.', "-"));
        let spec = spec(name).ok_or_else(|| {
            cx.err(
                None,
                &key,
                format!(
                    "unknown parameter; parameters: {}",
                    params::names().join(", ")
                ),
            )
        })?;
        let mut values = Vec::new();
        for part in split_list(
            text,
            matches!(spec.kind, wirebench_model::Kind::Custom { .. }),
        ) {
            let part = part.as_str();
            if part.trim().is_empty() {
                return Err(cx.err(None, &key, format!("empty value in list {text:?}")));
            }
            values.push(
                spec.parse(part)
                    .map_err(|e| cx.err(None, &key, e.to_string()))?,
            );
        }
        self.grid.set(name, values);
        // The command line wins over what a part sets.
        for part in &mut self.parts {
            part.grid.axes.retain(|a| a.name != name);
        }
        Ok(())
    }

    /// Removes a parameter from the base grid and every part, so its default (or none)
    /// applies again.
    pub fn clear_param(&mut self, name: &str) {
        self.grid.axes.retain(|a| a.name != name);
        for part in &mut self.parts {
            part.grid.axes.retain(|a| a.name != name);
        }
    }

    /// `count` and `duration` are two ways of saying how long a stream is: the one given
    /// on the command line replaces the other where a scenario file set it, so
    /// `--count 5000` means 5000 messages even in a scenario that streams for 1 s. Given
    /// both, both apply (whichever ends first).
    pub fn stream_length_from_command_line(&mut self, count: bool, duration: bool) {
        match (count, duration) {
            (true, false) => self.clear_param("duration"),
            (false, true) => self.clear_param("count"),
            _ => {}
        }
    }

    /// Keeps only the named `[[part]]`s (`--part latency,payload`). An unknown name is an
    /// error listing the scenario's parts, so a typo does not silently run nothing.
    pub fn select_parts(&mut self, names: &[String]) -> Result<(), String> {
        if self.parts.is_empty() {
            return Err(format!("scenario {:?} has no [[part]] sections", self.name));
        }
        for n in names {
            if !self.parts.iter().any(|p| &p.name == n) {
                let have: Vec<&str> = self.parts.iter().map(|p| p.name.as_str()).collect();
                return Err(format!(
                    "scenario {:?} has no part {n:?}; its parts: {}",
                    self.name,
                    have.join(", ")
                ));
            }
        }
        self.parts.retain(|p| names.contains(&p.name));
        Ok(())
    }

    /// The grids to expand: the base alone, or the base overridden by each part.
    pub fn grids(&self) -> Vec<Grid> {
        let base = self.complete_grid();
        if self.parts.is_empty() {
            return vec![base];
        }
        self.parts
            .iter()
            .map(|p| {
                let mut g = base.clone();
                for a in &p.grid.axes {
                    g.set(&a.name, a.values.clone());
                }
                g
            })
            .collect()
    }

    /// Every parameter the workloads need, defaults filled in after the given ones, in
    /// registry order.
    pub fn complete_grid(&self) -> Grid {
        let mut g = self.grid.clone();
        for p in params::params() {
            if g.get(p.name).is_none() && !p.default.is_empty() {
                let v = ParamValue::parse(p.kind, p.default)
                    .unwrap_or_else(|e| panic!("default of {}: {e}", p.name));
                g.set(p.name, vec![v]);
            }
        }
        g
    }
}

/// Splits a command-line list. Link specs contain commas of their own
/// (`rate=2400bit,delay=500ms`), so for them a `key=value` part continues the previous
/// item, and `;` separates items when given.
fn split_list(text: &str, spec_syntax: bool) -> Vec<String> {
    if !spec_syntax {
        return text.split(',').map(str::to_string).collect();
    }
    if text.contains(';') {
        return text.split(';').map(str::to_string).collect();
    }
    let mut items: Vec<String> = Vec::new();
    for part in text.split(',') {
        match items.last_mut() {
            Some(last) if part.contains('=') => {
                last.push(',');
                last.push_str(part);
            }
            _ => items.push(part.to_string()),
        }
    }
    items
}

/// The error for a key that is not one of `valid`, with a suggestion when one is close.
fn unknown_key(cx: &Ctx, item: &Item, key: &str, word: &str, valid: &[&str]) -> ScenarioError {
    cx.err(
        item_span(item),
        key,
        format!(
            "unknown key{}; valid keys: {}",
            did_you_mean(word, valid),
            valid.join(", ")
        ),
    )
}

fn string(cx: &Ctx, item: &Item, key: &str) -> Result<String, ScenarioError> {
    item.as_str()
        .map(str::to_string)
        .ok_or_else(|| cx.err(item_span(item), key, "expected a string in quotes"))
}

fn table<'a>(cx: &Ctx, item: &'a Item, key: &str) -> Result<&'a Table, ScenarioError> {
    item.as_table()
        .ok_or_else(|| cx.err(item_span(item), key, format!("expected a table: [{key}]")))
}

/// One scalar as the text a user would type: integers as digits, strings as is, booleans
/// as on/off. Floats are refused for sizes and counts (is 0.5 bytes or seconds?).
fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.value().to_string()),
        Value::Integer(i) => Some(i.value().to_string()),
        Value::Boolean(b) => Some(if *b.value() { "on" } else { "off" }.to_string()),
        Value::Float(f) => Some(f.value().to_string()),
        _ => None,
    }
}

fn parse_params(
    cx: &Ctx,
    t: &dyn TableLike,
    prefix: &str,
    grid: &mut Grid,
) -> Result<(), ScenarioError> {
    for (name, item) in t.iter() {
        let key = format!("{prefix}.{name}");
        let span = item_span(item);
        let spec = spec(name).ok_or_else(|| {
            cx.err(
                span.clone(),
                &key,
                format!(
                    "unknown parameter{}; parameters: {}",
                    did_you_mean(name, &params::names()),
                    params::names().join(", ")
                ),
            )
        })?;
        let value = item
            .as_value()
            .ok_or_else(|| cx.err(span.clone(), &key, "expected a value or a list of values"))?;
        let scalars: Vec<&Value> = match value {
            Value::Array(a) => a.iter().collect(),
            v => vec![v],
        };
        if scalars.is_empty() {
            return Err(cx.err(span, &key, "an empty list would make zero cases"));
        }
        let mut values = Vec::new();
        for v in scalars {
            let vspan = v.span().or(span.clone());
            let text = scalar_text(v).ok_or_else(|| {
                cx.err(
                    vspan.clone(),
                    &key,
                    "expected a number, a string or a list of them",
                )
            })?;
            if matches!(v, Value::Float(_)) && !matches!(spec.kind, wirebench_model::Kind::Rate) {
                return Err(cx.err(vspan, &key, format!("{text} needs a unit, written as a string (e.g. \"{text}s\" or \"{text}KiB\")")));
            }
            values.push(
                spec.parse(&text)
                    .map_err(|e| cx.err(vspan, &key, e.to_string()))?,
            );
        }
        grid.set(name, values);
    }
    Ok(())
}

fn parse_parts(cx: &Ctx, item: &Item, sc: &mut Scenario) -> Result<(), ScenarioError> {
    let parts = item
        .as_array_of_tables()
        .ok_or_else(|| cx.err(item_span(item), "part", "expected [[part]] sections"))?;
    for (i, t) in parts.iter().enumerate() {
        let mut part = Part {
            name: format!("part {}", i + 1),
            grid: Grid::default(),
        };
        for (k, v) in t.iter() {
            let key = format!("part.{k}");
            match k {
                "name" => part.name = string(cx, v, &key)?,
                "params" => {
                    let tl = v.as_table_like().ok_or_else(|| {
                        cx.err(item_span(v), &key, "expected a table of parameters")
                    })?;
                    parse_params(cx, tl, &key, &mut part.grid)?;
                }
                other => return Err(unknown_key(cx, v, &key, other, &["name", "params"])),
            }
        }
        sc.parts.push(part);
    }
    Ok(())
}

const CHART_KINDS: &[&str] = &["lines", "bars", "rounds", "cdf"];

fn param_name(cx: &Ctx, v: &Item, key: &str) -> Result<String, ScenarioError> {
    let name = string(cx, v, key)?;
    if spec(&name).is_none() {
        return Err(cx.err(
            item_span(v),
            key,
            format!(
                "unknown parameter {name:?}{}",
                did_you_mean(&name, &params::names())
            ),
        ));
    }
    Ok(name)
}

fn parse_charts(cx: &Ctx, item: &Item, sc: &mut Scenario) -> Result<(), ScenarioError> {
    let charts = item
        .as_array_of_tables()
        .ok_or_else(|| cx.err(item_span(item), "chart", "expected [[chart]] sections"))?;
    for t in charts.iter() {
        let mut c = ChartSpec::default();
        for (k, v) in t.iter() {
            let key = format!("chart.{k}");
            match k {
                "metric" => c.metric = string(cx, v, &key)?,
                "title" => c.title = Some(string(cx, v, &key)?),
                "kind" => {
                    let kind = string(cx, v, &key)?;
                    if !CHART_KINDS.contains(&kind.as_str()) {
                        return Err(cx.err(
                            item_span(v),
                            &key,
                            format!(
                                "unknown chart kind {kind:?}; kinds: {}",
                                CHART_KINDS.join(", ")
                            ),
                        ));
                    }
                    c.kind = Some(kind);
                }
                "x" => c.x = Some(param_name(cx, v, &key)?),
                "series" => {
                    let arr = v.as_array().ok_or_else(|| {
                        cx.err(item_span(v), &key, "expected a list of parameter names")
                    })?;
                    let mut names = Vec::new();
                    for e in arr.iter() {
                        let name = e.as_str().unwrap_or_default().to_string();
                        if spec(&name).is_none() {
                            return Err(cx.err(
                                e.span(),
                                &key,
                                format!("unknown parameter {name:?}"),
                            ));
                        }
                        names.push(name);
                    }
                    c.series = Some(names);
                }
                "log_x" | "log_y" => {
                    let b = v
                        .as_bool()
                        .ok_or_else(|| cx.err(item_span(v), &key, "expected true or false"))?;
                    if k == "log_x" {
                        c.log_x = Some(b);
                    } else {
                        c.log_y = Some(b);
                    }
                }
                "filter" => {
                    let tl = v.as_table_like().ok_or_else(|| {
                        cx.err(
                            item_span(v),
                            &key,
                            "expected a table: { workload = \"stream\" }",
                        )
                    })?;
                    for (pk, pv) in tl.iter() {
                        if spec(pk).is_none() {
                            return Err(cx.err(
                                item_span(pv),
                                &format!("{key}.{pk}"),
                                "unknown parameter",
                            ));
                        }
                        let text = pv
                            .as_str()
                            .map(str::to_string)
                            .or_else(|| pv.as_integer().map(|i| i.to_string()))
                            .ok_or_else(|| {
                                cx.err(
                                    item_span(pv),
                                    &format!("{key}.{pk}"),
                                    "expected a value as typed in [params]",
                                )
                            })?;
                        c.filter.insert(pk.to_string(), text);
                    }
                }
                other => {
                    return Err(unknown_key(
                        cx,
                        v,
                        &key,
                        other,
                        &[
                            "metric", "kind", "x", "series", "log_x", "log_y", "title", "filter",
                        ],
                    ));
                }
            }
        }
        let kind = c.kind.as_deref().unwrap_or("lines");
        if c.metric.is_empty() && kind != "rounds" && kind != "cdf" {
            return Err(cx.err(
                t.span(),
                "chart.metric",
                "missing: the metric to chart, e.g. metric = \"rtt.stable\"",
            ));
        }
        if kind == "lines" && c.x.is_none() {
            return Err(cx.err(
                t.span(),
                "chart.x",
                "missing: a lines chart needs the parameter on its x axis, e.g. x = \"payload\"",
            ));
        }
        sc.charts.push(c);
    }
    Ok(())
}

fn parse_references(cx: &Ctx, item: &Item, sc: &mut Scenario) -> Result<(), ScenarioError> {
    let refs = item.as_array_of_tables().ok_or_else(|| {
        cx.err(
            item_span(item),
            "reference",
            "expected [[reference]] sections",
        )
    })?;
    for t in refs.iter() {
        let mut r = Reference {
            source: String::new(),
            when: Vec::new(),
            metrics: Vec::new(),
        };
        for (k, v) in t.iter() {
            let key = format!("reference.{k}");
            match k {
                "source" => r.source = string(cx, v, &key)?,
                "when" => {
                    let tl = v
                        .as_table_like()
                        .ok_or_else(|| cx.err(item_span(v), &key, "expected a table"))?;
                    let mut g = Grid::default();
                    parse_params(cx, tl, &key, &mut g)?;
                    for a in g.axes {
                        if a.values.len() != 1 {
                            return Err(cx.err(
                                item_span(v),
                                &key,
                                format!("{}: one value, not a list", a.name),
                            ));
                        }
                        r.when.push((a.name, a.values[0].clone()));
                    }
                }
                "metrics" => {
                    let tl = v
                        .as_table_like()
                        .ok_or_else(|| cx.err(item_span(v), &key, "expected a table"))?;
                    for (m, mv) in tl.iter() {
                        let n = mv
                            .as_float()
                            .or_else(|| mv.as_integer().map(|i| i as f64))
                            .ok_or_else(|| {
                                cx.err(item_span(mv), &format!("{key}.{m}"), "expected a number")
                            })?;
                        r.metrics.push((m.to_string(), n));
                    }
                }
                other => {
                    return Err(unknown_key(
                        cx,
                        v,
                        &key,
                        other,
                        &["source", "when", "metrics"],
                    ));
                }
            }
        }
        sc.references.push(r);
    }
    Ok(())
}

fn positive_int(cx: &Ctx, item: &Item, key: &str) -> Result<u64, ScenarioError> {
    match item.as_integer() {
        Some(i) if i >= 0 => Ok(i as u64),
        _ => Err(cx.err(item_span(item), key, "expected a whole number >= 0")),
    }
}

fn parse_run(cx: &Ctx, t: &Table, sc: &mut Scenario) -> Result<(), ScenarioError> {
    for (name, item) in t.iter() {
        let key = format!("run.{name}");
        match name {
            "repeat" => {
                let n = positive_int(cx, item, &key)?;
                if n == 0 || n > 1_000_000 {
                    return Err(cx.err(item_span(item), &key, "must be between 1 and 1000000"));
                }
                sc.repeat = n as u32;
            }
            "seed" => sc.seed = positive_int(cx, item, &key)?,
            "timeout" => {
                let s = string(cx, item, &key)?;
                sc.stall_timeout =
                    parse_duration(&s).map_err(|e| cx.err(item_span(item), &key, e.to_string()))?;
            }
            other => {
                return Err(unknown_key(
                    cx,
                    item,
                    &key,
                    other,
                    &["repeat", "seed", "timeout"],
                ));
            }
        }
    }
    Ok(())
}

fn string_list(cx: &Ctx, item: &Item, key: &str) -> Result<Vec<String>, ScenarioError> {
    let arr = item.as_array().ok_or_else(|| {
        cx.err(
            item_span(item),
            key,
            "expected a list of strings, e.g. [\"mode\"]",
        )
    })?;
    arr.iter()
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| cx.err(v.span(), key, "expected a list of strings"))
        })
        .collect()
}

fn parse_output(cx: &Ctx, t: &Table, sc: &mut Scenario) -> Result<(), ScenarioError> {
    for (name, item) in t.iter() {
        let key = format!("output.{name}");
        match name {
            "tables" => {
                let list = string_list(cx, item, &key)?;
                for p in &list {
                    if spec(p).is_none() {
                        return Err(cx.err(
                            item_span(item),
                            &key,
                            format!(
                                "{p:?} is not a parameter; parameters: {}",
                                params::names().join(", ")
                            ),
                        ));
                    }
                }
                sc.tables = Some(list);
            }
            "columns" => {
                let list = string_list(cx, item, &key)?;
                for c in &list {
                    wirebench_model::results::check_column(c)
                        .map_err(|e| cx.err(item_span(item), &key, e))?;
                }
                sc.columns = Some(list);
            }
            other => return Err(unknown_key(cx, item, &key, other, &["tables", "columns"])),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse() {
        for (name, _) in BUILTIN {
            let s = Scenario::builtin(name).unwrap();
            assert_eq!(&s.name, name);
            assert!(!s.description.is_empty());
        }
    }

    #[test]
    fn full_file() {
        let s = Scenario::parse(
            "name = \"x\"\n[params]\nmode = [\"oneway\", \"echo\"]\npayload = [100, \"1.5KiB\"]\nthink = \"5ms\"\nnodelay = false\n[run]\nrepeat = 3\nseed = 9\ntimeout = \"10s\"\n[output]\ntables = [\"mode\"]\ncolumns = [\"rtt.*\"]\n",
            "x.toml",
        )
        .unwrap();
        assert_eq!(s.repeat, 3);
        assert_eq!(s.seed, 9);
        assert_eq!(s.stall_timeout, Duration::from_secs(10));
        assert_eq!(s.grid.varying(), ["mode", "payload"]);
        assert_eq!(
            s.grid.get("payload").unwrap().values[1].value.as_bytes(),
            Some(1536)
        );
        assert_eq!(s.grid.get("nodelay").unwrap().values[0].label, "off");
        assert_eq!(s.tables, Some(vec!["mode".to_string()]));
    }

    fn err(text: &str) -> String {
        Scenario::parse(text, "bad.toml").unwrap_err().to_string()
    }

    #[test]
    fn chart_sections() {
        let s = Scenario::parse(
            "[[chart]]\nmetric = \"rtt.first\"\nx = \"link.delay\"\nseries = [\"link.rate\"]\n\
             log_y = true\nfilter = { workload = \"pingpong\", payload = 2 }\n\
             [[chart]]\nkind = \"rounds\"\n",
            "c.toml",
        )
        .unwrap();
        assert_eq!(s.charts.len(), 2);
        assert_eq!(s.charts[0].x.as_deref(), Some("link.delay"));
        assert_eq!(s.charts[0].log_y, Some(true));
        assert_eq!(s.charts[0].filter["payload"], "2");
        assert_eq!(s.charts[1].kind.as_deref(), Some("rounds"));
        let e = err("[[chart]]\nmetric = \"rtt.p50\"\n\nx = \"paylod\"\n");
        assert!(
            e.starts_with("bad.toml:4: chart.x: unknown parameter \"paylod\""),
            "{e}"
        );
        let e = err("[[chart]]\nmetric = \"rtt.p50\"\nkind = \"pie\"\n");
        assert!(
            e.starts_with("bad.toml:3: chart.kind: unknown chart kind"),
            "{e}"
        );
        let e = err("[[chart]]\nmetric = \"rtt.p50\"\n");
        assert!(e.contains("chart.x: missing"), "{e}");
    }

    #[test]
    fn errors_name_file_line_and_key() {
        assert_eq!(
            err("name = \"x\"\n[params]\npayload = [100, \"10XB\"]\n"),
            "bad.toml:3: params.payload: \"10XB\" is not a valid byte size: unknown unit \"XB\" (examples: 100, 1500B, 1.5KiB, 10KiB, 1MiB, 64kB)"
        );
        let e = err("[params]\n\npayloda = 3\n");
        assert!(
            e.starts_with(
                "bad.toml:3: params.payloda: unknown parameter (did you mean `payload`?)"
            ),
            "{e}"
        );
        let e = err("[params]\nworkload = \"flood\"\n");
        assert!(
            e.starts_with("bad.toml:2: params.workload:") && e.contains("pingpong, stream"),
            "{e}"
        );
        let e = err("payload = 3\n");
        assert!(
            e.starts_with("bad.toml:1: payload: unknown key (parameters go under [params]"),
            "{e}"
        );
        let e = err("[run]\nrepeat = 0\n");
        assert!(e.starts_with("bad.toml:2: run.repeat:"), "{e}");
        let e = err("[params]\nthink = 0.5\n");
        assert!(e.contains("needs a unit"), "{e}");
        let e = err("[params]\npayload = []\n");
        assert!(e.contains("zero cases"), "{e}");
        let e = err("[output]\ntables = [\"colour\"]\n");
        assert!(e.starts_with("bad.toml:2: output.tables:"), "{e}");
        let e = err("[output]\ncolumns = [\"rtt.*\", \"nosuch.*\"]\n");
        assert!(
            e.starts_with("bad.toml:2: output.columns: \"nosuch.*\" matches no metric"),
            "{e}"
        );
        let e = err("[params]\nrounds = [10, 0]\n");
        assert!(
            e.starts_with("bad.toml:2: params.rounds: \"0\" is not allowed"),
            "{e}"
        );
    }

    #[test]
    fn syntax_errors_have_a_line() {
        let e = err("name = \"x\"\n[params\npayload = 1\n");
        assert!(e.starts_with("bad.toml:2: not valid TOML"), "{e}");
    }

    #[test]
    fn link_specs_keep_their_commas() {
        assert_eq!(
            split_list("rate=1Gbit,delay=10ms,queue=4MiB", true),
            ["rate=1Gbit,delay=10ms,queue=4MiB"]
        );
        assert_eq!(
            split_list("2400bit/500ms,9600bit/1s,loss=1%", true),
            ["2400bit/500ms", "9600bit/1s,loss=1%"]
        );
        assert_eq!(
            split_list("rate=1Gbit,delay=1ms;rate=2Gbit", true),
            ["rate=1Gbit,delay=1ms", "rate=2Gbit"]
        );
        assert_eq!(split_list("1,2", false), ["1", "2"]);
        let mut s = Scenario::empty("t");
        s.set_param(
            "link",
            "rate=2400bit,delay=500ms,jitter=10ms,loss=1%,queue=64KiB,mtu=1500",
        )
        .unwrap();
        assert_eq!(s.grid.get("link").unwrap().values.len(), 1);
        let e = s.set_param("link", "rate=fast").unwrap_err().to_string();
        assert!(e.starts_with("command line: --link:"), "{e}");
    }

    #[test]
    fn command_line_overrides_keep_order_and_validate() {
        let mut s = Scenario::builtin("default").unwrap();
        s.set_param("payload", "2,100,1500,10KiB,1MiB").unwrap();
        assert_eq!(s.grid.get("payload").unwrap().values.len(), 5);
        let e = s.set_param("payload", "2,,3").unwrap_err().to_string();
        assert!(e.starts_with("command line: --payload: empty value"), "{e}");
        let e = s.set_param("protocol", "smtp").unwrap_err().to_string();
        assert!(e.contains("raw"), "{e}");
    }
}
