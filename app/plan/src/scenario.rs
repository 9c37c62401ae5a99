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
//! The file is read with serde into types that declare its structure (`File` and the
//! tables under it, `deny_unknown_fields`); `[params]` and the tables like it are open,
//! their keys are parameter names checked here against the workloads' registry.
//!
//! Every error names the file, line and key (`file.toml:7: params.payload: ...`), and an
//! unknown key lists the valid ones. The format is documented in `docs/scenarios.md`.

use crate::params::{self, spec};
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;
use std::path::Path;
use std::time::Duration;
use toml::Spanned;
use wirebench_model::located::{self, Problem};
use wirebench_model::{Grid, Kind, ParamValue, parse_duration};
use wirebench_report::ChartSpec;
use wirebench_report::info::Claim;

include!(concat!(env!("OUT_DIR"), "/scenarios.rs"));

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
    /// Parameters set on the command line ([`Scenario::set_param`]), in order: a note
    /// says so before the run when one of them applies to no planned case.
    pub given: Vec<String>,
}

/// One `[[part]]` of a scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub name: String,
    pub grid: Grid,
    /// Runs of each of its cases (`repeat = 3` in the part), where one run would decide
    /// what the report says (a browser's noisy round trips); `None`: the scenario's.
    pub repeat: Option<u32>,
}

/// A published figure: for cases whose parameters match `when`, `metrics` are the
/// reference values (in the metric's unit), attributed to `source`.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    pub source: String,
    pub when: Vec<(String, ParamValue)>,
    pub metrics: Vec<(String, f64)>,
}

/// A scenario mistake, located (file or `command line`, line, dotted key).
pub type ScenarioError = wirebench_model::located::FileError;

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
    fn err(&self, span: Option<Range<usize>>, key: &str, msg: impl Into<String>) -> ScenarioError {
        ScenarioError {
            origin: self.origin.to_string(),
            line: span.map(|s| located::line_of(self.text, s.start)),
            key: (!key.is_empty()).then(|| key.to_string()),
            message: msg.into(),
        }
    }

    /// A TOML or structure error (unknown key, wrong type), located.
    fn toml_error(&self, e: &toml::de::Error) -> ScenarioError {
        let l = located::toml_error(self.text, e);
        let message = match (&l.problem, &l.key) {
            // A parameter written outside [params].
            (Problem::UnknownKey { valid, .. }, Some(key)) if spec(key).is_some() => format!(
                "unknown key (parameters go under [params]: `[params]` then `{key} = ...`); \
                 valid keys: {}",
                valid.join(", ")
            ),
            _ => l.message(),
        };
        ScenarioError {
            origin: self.origin.to_string(),
            line: l.line,
            key: l.key,
            message,
        }
    }
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
            given: Vec::new(),
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
        let file: File = toml::from_str(text).map_err(|e| cx.toml_error(&e))?;
        let default_name = Path::new(origin)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("scenario");
        let mut sc = Scenario::empty(default_name);
        if let Some(name) = file.name {
            sc.name = name;
        }
        if let Some(description) = file.description {
            sc.description = description;
        }
        if let Some(params) = &file.params {
            params_into(&cx, params, "params", &mut sc.grid)?;
        }
        for (i, p) in file.part.iter().enumerate() {
            let mut part = Part {
                name: p.name.clone().unwrap_or_else(|| format!("part {}", i + 1)),
                grid: Grid::default(),
                repeat: p
                    .repeat
                    .as_ref()
                    .map(|r| repeat_count(&cx, r, "part.repeat"))
                    .transpose()?,
            };
            if let Some(params) = &p.params {
                params_into(&cx, params, "part.params", &mut part.grid)?;
            }
            sc.parts.push(part);
        }
        for r in &file.reference {
            sc.references.push(reference(&cx, r)?);
        }
        check_references(&cx, &sc, &file.reference)?;
        for c in &file.chart {
            sc.charts.push(chart(&cx, c)?);
        }
        run(&cx, &file.run, &mut sc)?;
        output(&cx, &file.output, &mut sc)?;
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
        for part in split_list(text, matches!(spec.kind, Kind::Custom { .. })) {
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
        if !self.given.iter().any(|g| g == name) {
            self.given.push(name.to_string());
        }
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
        self.grids_with_runs().into_iter().map(|(g, _)| g).collect()
    }

    /// [`Scenario::grids`], each with the runs of its cases (its part's `repeat`, else
    /// the scenario's).
    pub fn grids_with_runs(&self) -> Vec<(Grid, u32)> {
        let base = self.complete_grid();
        if self.parts.is_empty() {
            return vec![(base, self.repeat)];
        }
        self.parts
            .iter()
            .map(|p| {
                let mut g = base.clone();
                for a in &p.grid.axes {
                    g.set(&a.name, a.values.clone());
                }
                (g, p.repeat.unwrap_or(self.repeat))
            })
            .collect()
    }

    /// Runs every case `n` times (`--repeat N`), the parts' own counts included: the
    /// command line wins over the file.
    pub fn set_repeat(&mut self, n: u32) {
        self.repeat = n;
        for part in &mut self.parts {
            part.repeat = None;
        }
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

/// A scenario file as written. serde checks the structure (which keys each table has,
/// and their types); the functions below check the values, with the spans kept.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: Option<String>,
    description: Option<String>,
    params: Option<Entries<ParamInput>>,
    #[serde(default)]
    part: Vec<PartFile>,
    #[serde(default)]
    reference: Vec<ReferenceFile>,
    #[serde(default)]
    chart: Vec<Spanned<ChartFile>>,
    #[serde(default)]
    run: RunFile,
    #[serde(default)]
    output: OutputFile,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PartFile {
    name: Option<String>,
    params: Option<Entries<ParamInput>>,
    repeat: Option<Spanned<u64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReferenceFile {
    source: Option<String>,
    when: Option<Entries<ParamInput>>,
    metrics: Option<Entries<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChartFile {
    metric: Option<String>,
    kind: Option<Spanned<String>>,
    x: Option<Spanned<String>>,
    series: Option<Vec<Spanned<String>>>,
    log_x: Option<bool>,
    log_y: Option<bool>,
    title: Option<String>,
    filter: Option<Entries<Scalar>>,
    lead: Option<bool>,
    quantiles: Option<Spanned<Vec<f64>>>,
    column: Option<Spanned<String>>,
    claims: Option<Vec<Spanned<ClaimFile>>>,
    x_metric: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClaimFile {
    quantile: f64,
    base: Entries<Scalar>,
    add: String,
    label: String,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RunFile {
    repeat: Option<Spanned<u64>>,
    seed: Option<u64>,
    timeout: Option<Spanned<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct OutputFile {
    tables: Option<Spanned<Vec<String>>>,
    columns: Option<Spanned<Vec<String>>>,
}

/// An open table (`[params]`, `when`, `metrics`, `filter`): its entries in the order
/// written (which is the order of the axes), the values with their spans.
struct Entries<V>(Vec<(String, Spanned<V>)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Entries<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct EntriesVisitor<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for EntriesVisitor<V> {
            type Value = Entries<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries<V>, A::Error> {
                let mut entries = Vec::new();
                while let Some(k) = map.next_key::<String>()? {
                    not_a_date(&k, &self)?;
                    entries.push((k, map.next_value()?));
                }
                Ok(Entries(entries))
            }
        }
        d.deserialize_map(EntriesVisitor(PhantomData))
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum ScalarKind {
    Text,
    Integer,
    Float,
    Boolean,
}

/// One value as the text a user would type: integers as digits, strings as is, booleans
/// as on/off; the kind is kept since floats are refused for sizes and counts (is 0.5
/// bytes or seconds?).
#[derive(Debug, Clone, PartialEq)]
struct Scalar {
    text: String,
    kind: ScalarKind,
}

/// A parameter's value in a file: one value, or a list of them (an axis).
enum ParamInput {
    One(Scalar),
    List(Vec<Spanned<Scalar>>),
    /// A table where a value belongs, with its keys (`link.rate = ...` unquoted).
    Table(Vec<String>),
}

/// The visitor methods of one scalar, shared by [`Scalar`] and [`ParamInput`].
macro_rules! visit_scalars {
    ($wrap:expr) => {
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok($wrap(Scalar {
                text: v.to_string(),
                kind: ScalarKind::Text,
            }))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok($wrap(Scalar {
                text: v.to_string(),
                kind: ScalarKind::Integer,
            }))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok($wrap(Scalar {
                text: v.to_string(),
                kind: ScalarKind::Integer,
            }))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok($wrap(Scalar {
                text: v.to_string(),
                kind: ScalarKind::Float,
            }))
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
            let text = if v { "on" } else { "off" }.to_string();
            Ok($wrap(Scalar {
                text,
                kind: ScalarKind::Boolean,
            }))
        }
    };
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ScalarVisitor;
        impl Visitor<'_> for ScalarVisitor {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number, a string or true/false")
            }
            visit_scalars!(|s| s);
        }
        d.deserialize_any(ScalarVisitor)
    }
}

impl<'de> Deserialize<'de> for ParamInput {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct InputVisitor;
        impl<'de> Visitor<'de> for InputVisitor {
            type Value = ParamInput;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a value or a list of values")
            }
            visit_scalars!(ParamInput::One);
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ParamInput, A::Error> {
                let mut values = Vec::new();
                while let Some(v) = seq.next_element()? {
                    values.push(v);
                }
                Ok(ParamInput::List(values))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ParamInput, A::Error> {
                let mut keys = Vec::new();
                while let Some(k) = map.next_key::<String>()? {
                    not_a_date(&k, &self)?;
                    map.next_value::<de::IgnoredAny>()?;
                    keys.push(k);
                }
                Ok(ParamInput::Table(keys))
            }
        }
        d.deserialize_any(InputVisitor)
    }
}

/// The `toml` crate hands a date-time to a visitor as a table with one private key; this
/// refuses it as what it is (a date-time is no parameter value, nor a table of them).
fn not_a_date<'de, E: de::Error>(key: &str, exp: &impl Visitor<'de>) -> Result<(), E> {
    if key.starts_with("$__toml_private") {
        return Err(E::invalid_type(de::Unexpected::Other("a date-time"), exp));
    }
    Ok(())
}

fn span_of<T>(v: &Spanned<T>) -> Option<Range<usize>> {
    Some(v.span())
}

/// Checks an open table of parameters (`[params]`, a part's `params`, a reference's
/// `when`) and sets them in `grid`, in the order written.
fn params_into(
    cx: &Ctx,
    entries: &Entries<ParamInput>,
    prefix: &str,
    grid: &mut Grid,
) -> Result<(), ScenarioError> {
    for (name, input) in &entries.0 {
        let name = name.as_str();
        let key = format!("{prefix}.{name}");
        let span = span_of(input);
        if let ParamInput::Table(keys) = input.get_ref() {
            // `link.rate = ...` unquoted is a table `link` with a key `rate`.
            if let Some(dotted) = keys
                .iter()
                .map(|k| format!("{name}.{k}"))
                .find(|dotted| spec(dotted).is_some())
            {
                return Err(cx.err(
                    span,
                    &key,
                    format!("a dotted name needs quotes: \"{dotted}\" = ..."),
                ));
            }
        }
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
        let scalars: Vec<(Option<Range<usize>>, &Scalar)> = match input.get_ref() {
            ParamInput::One(v) => vec![(span.clone(), v)],
            ParamInput::List(l) => l.iter().map(|v| (span_of(v), v.get_ref())).collect(),
            ParamInput::Table(_) => {
                return Err(cx.err(
                    span,
                    &key,
                    "expected a value or a list of values, found a table",
                ));
            }
        };
        if scalars.is_empty() {
            return Err(cx.err(span, &key, "an empty list would make zero cases"));
        }
        let mut values = Vec::new();
        for (vspan, v) in scalars {
            let text = &v.text;
            if v.kind == ScalarKind::Float && !matches!(spec.kind, Kind::Rate) {
                return Err(cx.err(
                    vspan,
                    &key,
                    format!(
                        "{text} needs a unit, written as a string (e.g. \"{text}s\" or \"{text}KiB\")"
                    ),
                ));
            }
            values.push(
                spec.parse(text)
                    .map_err(|e| cx.err(vspan, &key, e.to_string()))?,
            );
        }
        grid.set(name, values);
    }
    Ok(())
}

fn reference(cx: &Ctx, r: &ReferenceFile) -> Result<Reference, ScenarioError> {
    let mut out = Reference {
        source: r.source.clone().unwrap_or_default(),
        when: Vec::new(),
        metrics: Vec::new(),
    };
    if let Some(when) = &r.when {
        let mut g = Grid::default();
        params_into(cx, when, "reference.when", &mut g)?;
        // TOML has no duplicate keys: one axis per entry, in order.
        for (a, (_, input)) in g.axes.into_iter().zip(&when.0) {
            if a.values.len() != 1 {
                return Err(cx.err(
                    span_of(input),
                    "reference.when",
                    format!("{}: one value, not a list", a.name),
                ));
            }
            out.when.push((a.name, a.values[0].clone()));
        }
    }
    if let Some(metrics) = &r.metrics {
        out.metrics = metrics
            .0
            .iter()
            .map(|(m, v)| (m.clone(), *v.get_ref()))
            .collect();
    }
    Ok(out)
}

const CHART_KINDS: &[&str] = &["lines", "bars", "rounds", "cdf", "load", "tradeoff"];
/// The series a `load` chart can draw: `wirebench_report::charts::LOAD_COLUMNS`.
use wirebench_report::charts::LOAD_COLUMNS;

/// Refuses, before anything runs, a reference that could never be printed: a metric no
/// workload records (a typo would otherwise show nothing, silently), or a `when` that no
/// case of the file's plan matches. The plan is the whole file's, all parts included,
/// so `--part` or a command-line value that leaves a reference without cases is fine.
fn check_references(cx: &Ctx, sc: &Scenario, files: &[ReferenceFile]) -> Result<(), ScenarioError> {
    for r in files {
        for (metric, v) in r.metrics.iter().flat_map(|m| &m.0) {
            if crate::metrics::spec(metric).is_none() {
                return Err(cx.err(
                    span_of(v),
                    &format!("reference.metrics.{metric}"),
                    format!(
                        "no workload records this metric{}; metrics are listed in docs/results.md",
                        did_you_mean(
                            metric,
                            &crate::metrics::names()
                                .iter()
                                .map(String::as_str)
                                .collect::<Vec<_>>()
                        )
                    ),
                ));
            }
        }
    }
    if files.iter().all(|r| r.when.is_none()) {
        return Ok(());
    }
    let cases = crate::plan(sc);
    for (r, file) in sc.references.iter().zip(files) {
        let Some(when) = &file.when else { continue };
        let matches = |c: &crate::Case, w: &[(String, ParamValue)]| {
            w.iter().all(|(n, v)| c.get(n) == Some(&v.value))
        };
        if cases.iter().any(|c| matches(c, &r.when)) {
            continue;
        }
        // Name the entry that excludes every case, with the values the cases have.
        let culprit = r.when.iter().zip(&when.0).find(|((n, v), _)| {
            !cases
                .iter()
                .any(|c| matches(c, std::slice::from_ref(&(n.clone(), v.clone()))))
        });
        let err = match culprit {
            Some(((name, v), (_, input))) => {
                let mut have: Vec<&str> = Vec::new();
                for c in &cases {
                    if let Some((_, pv)) = c.point.iter().find(|(n, _)| n == name) {
                        if !have.contains(&pv.label.as_str()) {
                            have.push(pv.label.as_str());
                        }
                    }
                }
                let why = if have.is_empty() {
                    "no case of the scenario has this parameter (its workloads do not read it)"
                        .to_string()
                } else {
                    format!(
                        "no case of the scenario has {name} = {}{}; its cases have {}",
                        v.label,
                        did_you_mean(&v.label, &have),
                        have.join(", ")
                    )
                };
                cx.err(span_of(input), &format!("reference.when.{name}"), why)
            }
            None => cx.err(
                when.0.first().and_then(|(_, v)| span_of(v)),
                "reference.when",
                format!(
                    "no case of the scenario has all of {}: each value occurs, but never together",
                    r.when
                        .iter()
                        .map(|(n, v)| format!("{n} = {}", v.label))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
        };
        return Err(err);
    }
    Ok(())
}

fn param_name(cx: &Ctx, v: &Spanned<String>, key: &str) -> Result<String, ScenarioError> {
    let name = v.get_ref();
    if spec(name).is_none() {
        return Err(cx.err(
            span_of(v),
            key,
            format!(
                "unknown parameter {name:?}{}",
                did_you_mean(name, &params::names())
            ),
        ));
    }
    Ok(name.clone())
}

fn chart(cx: &Ctx, file: &Spanned<ChartFile>) -> Result<ChartSpec, ScenarioError> {
    let t = file.get_ref();
    let mut c = ChartSpec {
        metric: t.metric.clone().unwrap_or_default(),
        title: t.title.clone(),
        log_x: t.log_x,
        log_y: t.log_y,
        lead: t.lead.unwrap_or(false),
        x_metric: t.x_metric.clone(),
        ..ChartSpec::default()
    };
    if let Some(q) = &t.quantiles {
        if q.get_ref()
            .iter()
            .any(|v| !(v.is_finite() && *v > 0.0 && *v < 1.0))
        {
            return Err(cx.err(
                span_of(q),
                "chart.quantiles",
                "each quantile is a fraction between 0 and 1, e.g. quantiles = [0.85, 0.95]",
            ));
        }
        c.quantiles = Some(q.get_ref().clone());
    }
    if let Some(col) = &t.column {
        if !LOAD_COLUMNS.contains(&col.get_ref().as_str()) {
            return Err(cx.err(
                span_of(col),
                "chart.column",
                format!(
                    "unknown load column {:?}; columns: {}",
                    col.get_ref(),
                    LOAD_COLUMNS.join(", ")
                ),
            ));
        }
        c.column = Some(col.get_ref().clone());
    }
    for claim in t.claims.iter().flatten() {
        c.claims.push(chart_claim(cx, claim)?);
    }
    if let Some(kind) = &t.kind {
        if !CHART_KINDS.contains(&kind.get_ref().as_str()) {
            return Err(cx.err(
                span_of(kind),
                "chart.kind",
                format!(
                    "unknown chart kind {:?}; kinds: {}",
                    kind.get_ref(),
                    CHART_KINDS.join(", ")
                ),
            ));
        }
        c.kind = Some(kind.get_ref().clone());
    }
    if let Some(x) = &t.x {
        c.x = Some(param_name(cx, x, "chart.x")?);
    }
    if let Some(series) = &t.series {
        c.series = Some(
            series
                .iter()
                .map(|s| param_name(cx, s, "chart.series"))
                .collect::<Result<_, _>>()?,
        );
    }
    for (pk, pv) in t.filter.iter().flat_map(|f| &f.0) {
        let key = format!("chart.filter.{pk}");
        if spec(pk).is_none() {
            return Err(cx.err(span_of(pv), &key, "unknown parameter"));
        }
        let v = pv.get_ref();
        if !matches!(v.kind, ScalarKind::Text | ScalarKind::Integer) {
            return Err(cx.err(span_of(pv), &key, "expected a value as typed in [params]"));
        }
        c.filter.insert(pk.clone(), v.text.clone());
    }
    let kind = c.kind.as_deref().unwrap_or("lines");
    if kind == "load" && c.column.is_none() {
        return Err(cx.err(
            span_of(file),
            "chart.column",
            format!(
                "missing: a load chart draws one column of the series, e.g. column = \"active\" ({})",
                LOAD_COLUMNS.join(", ")
            ),
        ));
    }
    if c.metric.is_empty() && !matches!(kind, "rounds" | "cdf" | "load") {
        return Err(cx.err(
            span_of(file),
            "chart.metric",
            "missing: the metric to chart, e.g. metric = \"rtt.stable\"",
        ));
    }
    if kind == "tradeoff" && c.x_metric.is_none() {
        return Err(cx.err(
            span_of(file),
            "chart.x_metric",
            "missing: a tradeoff chart puts a metric on each axis, e.g. metric = \"throughput.bits_per_s\" and x_metric = \"link.one_way.p95\"",
        ));
    }
    if kind == "lines" && c.x.is_none() {
        return Err(cx.err(
            span_of(file),
            "chart.x",
            "missing: a lines chart needs the parameter on its x axis, e.g. x = \"payload\"",
        ));
    }
    Ok(c)
}

/// One `claims = [{ quantile, base, add, label }]` entry of a CDF chart.
fn chart_claim(cx: &Ctx, file: &Spanned<ClaimFile>) -> Result<Claim, ScenarioError> {
    let t = file.get_ref();
    if !(t.quantile > 0.0 && t.quantile < 1.0) {
        return Err(cx.err(
            span_of(file),
            "chart.claims.quantile",
            "a fraction between 0 and 1, e.g. quantile = 0.85",
        ));
    }
    let add = parse_duration(&t.add).map_err(|e| {
        cx.err(
            span_of(file),
            "chart.claims.add",
            format!("{e} (e.g. add = \"150ms\")"),
        )
    })?;
    let mut base = std::collections::BTreeMap::new();
    for (pk, pv) in &t.base.0 {
        let key = format!("chart.claims.base.{pk}");
        if spec(pk).is_none() {
            return Err(cx.err(span_of(pv), &key, "unknown parameter"));
        }
        base.insert(pk.clone(), pv.get_ref().text.clone());
    }
    Ok(Claim {
        quantile: t.quantile,
        base,
        add: add.as_secs_f64(),
        label: t.label.clone(),
    })
}

fn repeat_count(cx: &Ctx, repeat: &Spanned<u64>, key: &str) -> Result<u32, ScenarioError> {
    let n = *repeat.get_ref();
    if n == 0 || n > 1_000_000 {
        return Err(cx.err(span_of(repeat), key, "must be between 1 and 1000000"));
    }
    Ok(n as u32)
}

fn run(cx: &Ctx, r: &RunFile, sc: &mut Scenario) -> Result<(), ScenarioError> {
    if let Some(repeat) = &r.repeat {
        sc.repeat = repeat_count(cx, repeat, "run.repeat")?;
    }
    if let Some(seed) = r.seed {
        sc.seed = seed;
    }
    if let Some(timeout) = &r.timeout {
        sc.stall_timeout = parse_duration(timeout.get_ref())
            .map_err(|e| cx.err(span_of(timeout), "run.timeout", e.to_string()))?;
    }
    Ok(())
}

fn output(cx: &Ctx, o: &OutputFile, sc: &mut Scenario) -> Result<(), ScenarioError> {
    if let Some(tables) = &o.tables {
        for p in tables.get_ref() {
            if spec(p).is_none() {
                return Err(cx.err(
                    span_of(tables),
                    "output.tables",
                    format!(
                        "{p:?} is not a parameter{}; parameters: {}",
                        did_you_mean(p, &params::names()),
                        params::names().join(", ")
                    ),
                ));
            }
        }
        sc.tables = Some(tables.get_ref().clone());
    }
    if let Some(columns) = &o.columns {
        for c in columns.get_ref() {
            wirebench_model::metric::check_column(c, crate::metrics::names())
                .map_err(|e| cx.err(span_of(columns), "output.columns", e))?;
        }
        sc.columns = Some(columns.get_ref().clone());
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
        let e = err("[params]\npayload = 1\npayload = 2\n");
        assert!(
            e.starts_with("bad.toml:3: not valid TOML: duplicate key"),
            "{e}"
        );
    }

    #[test]
    fn unknown_keys_in_every_table_list_the_valid_ones() {
        assert_eq!(
            err("[run]\n\nrepet = 3\n"),
            "bad.toml:3: run.repet: unknown key (did you mean `repeat`?); valid keys: repeat, seed, timeout"
        );
        assert_eq!(
            err("nme = \"x\"\n"),
            "bad.toml:1: nme: unknown key (did you mean `name`?); valid keys: name, description, \
             params, part, reference, chart, run, output"
        );
        let e = err("[[part]]\nname = \"a\"\n[[part]]\nnmae = \"b\"\n");
        assert_eq!(
            e,
            "bad.toml:4: part.nmae: unknown key (did you mean `name`?); valid keys: name, params, repeat"
        );
        let e = err("[[chart]]\nmetric = \"rtt.p50\"\nx = \"payload\"\nlogy = true\n");
        assert!(
            e.starts_with("bad.toml:4: chart.logy: unknown key (did you mean `log_y`?); valid keys: metric, kind, x, series, log_x, log_y, title, filter"),
            "{e}"
        );
        let e = err("[[reference]]\nsorce = \"S1\"\n");
        assert!(
            e.starts_with("bad.toml:2: reference.sorce: unknown key (did you mean `source`?)"),
            "{e}"
        );
        let e = err("[output]\ntable = [\"mode\"]\n");
        assert!(
            e.starts_with("bad.toml:2: output.table: unknown key (did you mean `tables`?)"),
            "{e}"
        );
        // A parameter name in a part's params is checked like in [params].
        let e = err("[[part]]\nparams = { payloda = 2 }\n");
        assert!(
            e.starts_with(
                "bad.toml:2: part.params.payloda: unknown parameter (did you mean `payload`?)"
            ),
            "{e}"
        );
        // An unquoted dotted name makes a table; the error says to quote it.
        let e = err("[params]\nlink.rate = \"2400bit\"\n");
        assert!(
            e.starts_with(
                "bad.toml:2: params.link: a dotted name needs quotes: \"link.rate\" = ..."
            ),
            "{e}"
        );
    }

    #[test]
    fn wrong_types_say_what_was_expected() {
        assert_eq!(
            err("[run]\nrepeat = \"3\"\n"),
            "bad.toml:2: run.repeat: expected a whole number >= 0, found string \"3\""
        );
        assert_eq!(
            err("[run]\nseed = -1\n"),
            "bad.toml:2: run.seed: expected a whole number >= 0, found integer `-1`"
        );
        assert_eq!(
            err("[[chart]]\nmetric = \"rtt.p50\"\nx = \"payload\"\nlog_y = \"yes\"\n"),
            "bad.toml:4: chart.log_y: expected true or false, found string \"yes\""
        );
        assert_eq!(
            err("[[reference]]\nmetrics = { \"rtt.first\" = \"36 s\" }\n"),
            "bad.toml:2: reference.metrics.rtt.first: expected a number, found string \"36 s\""
        );
        assert_eq!(
            err("params = 3\n"),
            "bad.toml:1: params: expected a table, found integer `3`"
        );
        assert_eq!(
            err("[params]\npayload = [[1, 2]]\n"),
            "bad.toml:2: params.payload: expected a number, a string or true/false, found a list"
        );
        assert_eq!(
            err("[output]\ntables = \"mode\"\n"),
            "bad.toml:2: output.tables: expected a list, found string \"mode\""
        );
        assert_eq!(
            err("[params]\n\npayload = 1979-05-27\n"),
            "bad.toml:3: params.payload: expected a value or a list of values, found a date-time"
        );
        assert_eq!(
            err("params = 1979-05-27T07:32:00Z\n"),
            "bad.toml:1: params: expected a table, found a date-time"
        );
        let e = err("[[reference]]\nwhen = { payload = [2, 3] }\n");
        assert_eq!(
            e,
            "bad.toml:2: reference.when: payload: one value, not a list"
        );
    }

    #[test]
    fn references_that_could_never_print_are_refused_with_their_line() {
        let base = "[params]\nprotocol = \"xmpp\"\npayload = [2, 100]\n\
                    [[part]]\nparams = { \"link.delay\" = [\"0\", \"500ms\"] }\n\
                    [[reference]]\nsource = \"S1\"\n";
        assert_eq!(
            err(&format!(
                "{base}when = {{ payload = 2 }}\nmetrics = {{ \"rtt.stabel\" = 1.2 }}\n"
            )),
            "bad.toml:9: reference.metrics.rtt.stabel: no workload records this metric (did you \
             mean `rtt.stable`?); metrics are listed in docs/results.md"
        );
        assert_eq!(
            err(&format!(
                "{base}when = {{ payload = 3 }}\nmetrics = {{ \"rtt.stable\" = 1.2 }}\n"
            )),
            "bad.toml:8: reference.when.payload: no case of the scenario has payload = 3; its \
             cases have 2, 100"
        );
        assert_eq!(
            err(&format!(
                "{base}when = {{ \"link.delay\" = \"50ms\" }}\nmetrics = {{ \"rtt.stable\" = 1 }}\n"
            )),
            "bad.toml:8: reference.when.link.delay: no case of the scenario has link.delay = 50ms \
             (did you mean `500ms`?); its cases have 0, 500ms"
        );
        // Parameters a case drops (rounds under stream) match no case either.
        let e = err(&format!(
            "{base}when = {{ workload = \"stream\", rounds = 10 }}\nmetrics = {{ \"rtt.stable\" = 1 }}\n"
        ));
        assert!(
            e.starts_with("bad.toml:8: reference.when.workload: "),
            "{e}"
        );
        let e = err(&format!(
            "{base}[[part]]\nparams = {{ payload = 500, \"link.delay\" = \"1s\" }}\n\
             [[reference]]\nwhen = {{ payload = 500, \"link.delay\" = \"0\" }}\n\
             metrics = {{ \"rtt.stable\" = 1 }}\n"
        ));
        assert!(
            e.starts_with("bad.toml:11: reference.when: no case of the scenario has all of payload = 500, link.delay = 0"),
            "{e}"
        );
        // Matching one case of one part is enough.
        Scenario::parse(
            &format!("{base}when = {{ payload = 100, \"link.delay\" = \"500ms\" }}\nmetrics = {{ \"rtt.stable\" = 1 }}\n"),
            "ok.toml",
        )
        .unwrap();
    }

    #[test]
    fn params_keep_the_order_written() {
        let s = Scenario::parse(
            "[params]\npayload = [1, 2]\nmode = [\"oneway\", \"echo\"]\nworkload = \"stream\"\n\
             [[part]]\nparams = { think = [\"0\", \"1ms\"], rounds = [1, 2] }\n",
            "o.toml",
        )
        .unwrap();
        let names: Vec<&str> = s.grid.axes.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["payload", "mode", "workload"]);
        let names: Vec<&str> = s.parts[0]
            .grid
            .axes
            .iter()
            .map(|a| a.name.as_str())
            .collect();
        assert_eq!(names, ["think", "rounds"]);
        assert_eq!(s.parts[0].name, "part 1");
    }

    #[test]
    fn a_part_repeats_its_own_cases_and_the_command_line_wins() {
        let text = "[params]\npayload = [1, 2]\n[[part]]\nname = \"a\"\nrepeat = 3\n\
                    params = { rounds = 5 }\n[[part]]\nname = \"b\"\nparams = { rounds = 7 }\n";
        let mut s = Scenario::parse(text, "x.toml").unwrap();
        let runs: Vec<u32> = crate::plan(&s).iter().map(|c| c.runs).collect();
        assert_eq!(runs, [3, 3, 1, 1]);
        s.set_repeat(2);
        let runs: Vec<u32> = crate::plan(&s).iter().map(|c| c.runs).collect();
        assert_eq!(runs, [2, 2, 2, 2]);
        let e = Scenario::parse("[[part]]\nname = \"a\"\nrepeat = 0\n", "x.toml").unwrap_err();
        assert!(e.to_string().starts_with("x.toml:3: part.repeat:"), "{e}");
    }

    #[test]
    fn references_and_parts() {
        let s = Scenario::parse(
            "[params]\nprotocol = \"xmpp\"\npayload = 2\n\
             [[part]]\nname = \"latency\"\nparams = { \"link.delay\" = [\"0\", \"500ms\"] }\n\
             [[reference]]\nsource = \"S1\"\nwhen = { \"link.delay\" = \"0\", payload = 2 }\n\
             metrics = { \"rtt.stable\" = 1.2, \"rtt.first\" = 36 }\n",
            "r.toml",
        )
        .unwrap();
        assert_eq!(s.parts.len(), 1);
        assert_eq!(s.parts[0].name, "latency");
        assert_eq!(s.parts[0].grid.get("link.delay").unwrap().values.len(), 2);
        let r = &s.references[0];
        assert_eq!(r.source, "S1");
        let when: Vec<(&str, &str)> = r
            .when
            .iter()
            .map(|(n, v)| (n.as_str(), v.label.as_str()))
            .collect();
        assert_eq!(when, [("link.delay", "0"), ("payload", "2")]);
        assert_eq!(
            r.metrics,
            [
                ("rtt.stable".to_string(), 1.2),
                ("rtt.first".to_string(), 36.0)
            ]
        );
    }

    /// Valid values of some parameters, as TOML and as the label they give.
    const VALUES: &[(&str, &str, &str)] = &[
        ("payload", "100", "100"),
        ("payload", "\"10KiB\"", "10KiB"),
        ("mode", "\"echo\"", "echo"),
        ("rounds", "\"10k\"", "10k"),
        ("think", "\"5ms\"", "5ms"),
        ("nodelay", "false", "off"),
        ("count", "7", "7"),
        ("\"link.delay\"", "\"500ms\"", "500ms"),
    ];

    use proptest::prelude::*;

    proptest! {
        /// Parameters come out in the order written, each with the values written.
        #[test]
        fn any_params_table_keeps_order_and_values(
            picks in proptest::sample::subsequence((0..VALUES.len()).collect::<Vec<_>>(), 0..=VALUES.len()).prop_shuffle(),
            lists in proptest::collection::vec(proptest::bool::ANY, VALUES.len()),
        ) {
            // One value per parameter name, in a random order.
            let mut picks: Vec<usize> = picks;
            let mut seen = Vec::new();
            picks.retain(|&i| {
                let fresh = !seen.contains(&VALUES[i].0);
                seen.push(VALUES[i].0);
                fresh
            });
            let mut text = String::from("[params]\n");
            for &i in &picks {
                let (name, toml, _) = VALUES[i];
                if lists[i] {
                    text.push_str(&format!("{name} = [{toml}, {toml}]\n"));
                } else {
                    text.push_str(&format!("{name} = {toml}\n"));
                }
            }
            let s = Scenario::parse(&text, "p.toml").unwrap();
            let got: Vec<(String, Vec<String>)> = s
                .grid
                .axes
                .iter()
                .map(|a| (a.name.clone(), a.values.iter().map(|v| v.label.clone()).collect()))
                .collect();
            let want: Vec<(String, Vec<String>)> = picks
                .iter()
                .map(|&i| {
                    let (name, _, label) = VALUES[i];
                    let n = if lists[i] { 2 } else { 1 };
                    (name.trim_matches('"').to_string(), vec![label.to_string(); n])
                })
                .collect();
            prop_assert_eq!(got, want);
        }

        /// Any text gives a scenario or an error naming the file; never a panic.
        #[test]
        fn any_text_gives_a_scenario_or_a_located_error(
            text in "(\\[\\[?(params|run|part|chart|output|reference)\\]\\]?\n|[a-z_.\"]{1,8} = [\\[\\]{}0-9a-z\", .]{0,12}\n){0,6}"
        ) {
            if let Err(e) = Scenario::parse(&text, "f.toml") {
                prop_assert_eq!(&e.origin, "f.toml");
                if let Some(l) = e.line {
                    prop_assert!(l >= 1 && l <= text.lines().count() + 1, "{}", e);
                }
            }
        }
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
