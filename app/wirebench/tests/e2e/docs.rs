//! Every command block of README.md and docs/*.md, run as written, so the docs cannot
//! drift from the tool.
//!
//! What runs: each line of a ```` ```sh ```` block (a trailing `\` joins lines), through
//! `bash -c`, with the binary under test first on `PATH` as `wirebench`. Each block gets a
//! fresh empty working directory, shared by its lines (a later line may read what an
//! earlier one wrote). A line must exit 0 within its time limit.
//!
//! A doc changes what runs only through a comment on the line that says so, in the form
//! `(docs test: ...)`:
//! - `(docs test: skip, REASON)`: not run (e.g. it needs a terminal or an hour);
//! - `(docs test: background)`: started (a trailing `&` is dropped), left running for
//!   the rest of the block, then stopped (a server the next lines use);
//! - `(docs test: limit 5m)`: the time limit (default 3 minutes);
//! - `(docs test: full, REASON)`: run as written although it is long (limit 10 minutes);
//! - `(docs test: ARGS)`: anything else is appended to the command, shrinking it (flags
//!   given twice: the last wins).
//!
//! Four lines are understood without a comment, because this test already stands where
//! they lead: `cargo build --release` (the binary is built), `alias wirebench=...` (it is
//! on `PATH`), `bash scripts/test.sh` (this is part of it) and the `cargo run --release
//! -p wirebench --` prefix, which is replaced by the binary.
//!
//! The short form: a `wirebench run` line is run only when its `--dry-run` estimate, as
//! the test runs it, is at most 30 s; a longer one fails until its doc shrinks it with a
//! directive or marks it `full`. Blocks run three at a time (`WIREBENCH_DOCS_JOBS`), those
//! that start a server or real XMPP servers one after another;
//! `WIREBENCH_DOCS_ONLY=links.md` runs only the docs whose path contains that text.
//!
//! Lab commands need root, like the rest of the suite.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, PartialEq)]
enum Action {
    /// Run with `extra` appended; `full` when its length is the point (no short form).
    Run {
        extra: String,
        limit: Duration,
        full: bool,
    },
    Background,
    Skip(String),
}

#[derive(Debug, Clone)]
struct Line {
    file: String,
    line: usize,
    command: String,
    action: Action,
    /// The comment after the command, its directive included.
    comment: String,
}

const DEFAULT_LIMIT: Duration = Duration::from_secs(180);
/// The limit of a line marked `(docs test: full, WHY)`.
const FULL_LIMIT: Duration = Duration::from_secs(600);
/// The longest `--dry-run` estimate a documented `wirebench run` line may have as the
/// docs test runs it, unless marked `full`: the suite checks that each command works,
/// the virtual-time and lab tests check what long runs measure.
const SHORT_FORM_SECS: f64 = 30.0;

/// Splits `cmd   # comment (docs test: ...)` into the command and its directive.
fn parse_line(text: &str) -> Result<(String, Action), String> {
    let (cmd, comment) = split_comment(text);
    let cmd = cmd.trim().to_string();
    let directive = comment.and_then(|c| {
        let start = c.find("(docs test:")?;
        let rest = &c[start + "(docs test:".len()..];
        let end = rest.rfind(')')?;
        Some(rest[..end].trim().to_string())
    });
    let action = match directive {
        None => Action::Run {
            extra: String::new(),
            limit: DEFAULT_LIMIT,
            full: false,
        },
        Some(d) if d == "background" => Action::Background,
        Some(d) if d.starts_with("skip") => {
            let why = d.trim_start_matches("skip").trim_start_matches(',').trim();
            if why.is_empty() {
                return Err("a skip must say why: (docs test: skip, REASON)".into());
            }
            Action::Skip(why.to_string())
        }
        Some(d) if d.starts_with("full") => {
            if d.trim_start_matches("full")
                .trim_start_matches(',')
                .trim()
                .is_empty()
            {
                return Err("a full run must say why: (docs test: full, REASON)".into());
            }
            Action::Run {
                extra: String::new(),
                limit: FULL_LIMIT,
                full: true,
            }
        }
        Some(d) if d.starts_with("limit ") => {
            let t = d["limit ".len()..].trim();
            let limit = wirebench_duration(t).ok_or(format!("bad limit {t:?}"))?;
            Action::Run {
                extra: String::new(),
                limit,
                full: false,
            }
        }
        Some(d) => Action::Run {
            extra: d,
            limit: DEFAULT_LIMIT,
            full: false,
        },
    };
    Ok((cmd, action))
}

/// `90s`, `5m`, `2m30s`-free simple durations are enough for limits.
fn wirebench_duration(t: &str) -> Option<Duration> {
    let (n, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = n.parse().ok()?;
    match unit {
        "s" => Some(Duration::from_secs(n)),
        "m" | "min" => Some(Duration::from_secs(60 * n)),
        _ => None,
    }
}

/// The command and its trailing comment: a `#` outside quotes that starts a word.
fn split_comment(text: &str) -> (&str, Option<&str>) {
    let (mut single, mut double) = (false, false);
    let mut prev = ' ';
    for (i, c) in text.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev.is_whitespace() => {
                return (&text[..i], Some(&text[i + 1..]));
            }
            _ => {}
        }
        prev = c;
    }
    (text, None)
}

/// The command lines of every `sh` block of one Markdown file, grouped by block.
fn blocks(path: &Path, name: &str) -> Vec<Vec<Line>> {
    enum State {
        Outside,
        Run(Vec<Line>),
        Other,
    }
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    let mut state = State::Outside;
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        if let Some(fence) = raw.trim_start().strip_prefix("```") {
            state = match state {
                State::Outside if matches!(fence.trim(), "sh" | "bash" | "shell") => {
                    State::Run(Vec::new())
                }
                State::Outside => State::Other,
                State::Run(block) => {
                    out.push(block);
                    State::Outside
                }
                State::Other => State::Outside,
            };
            continue;
        }
        let State::Run(block) = &mut state else {
            continue;
        };
        let (start, joined) = match pending.take() {
            Some((s, mut acc)) => {
                acc.push(' ');
                acc.push_str(raw.trim());
                (s, acc)
            }
            None => (n, raw.to_string()),
        };
        if let Some(head) = joined.trim_end().strip_suffix('\\') {
            pending = Some((start, head.to_string()));
            continue;
        }
        let trimmed = joined.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let (command, action) =
            parse_line(&joined).unwrap_or_else(|e| panic!("{name}:{start}: {e}"));
        block.push(Line {
            file: name.to_string(),
            line: start,
            command,
            action,
            comment: split_comment(&joined).1.unwrap_or_default().to_string(),
        });
    }
    out
}

/// README.md and every Markdown file under docs/, with names relative to the root.
fn doc_files(root: &Path) -> Vec<(PathBuf, String)> {
    let mut files = vec![(root.join("README.md"), "README.md".to_string())];
    let mut dirs = vec![root.join("docs")];
    while let Some(d) = dirs.pop() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "md") {
                let name = p.strip_prefix(root).unwrap().display().to_string();
                files.push((p, name));
            }
        }
    }
    files
}

/// Lines this test stands in for (see the module docs); `None` keeps the command.
fn rewrite(command: &str, bin: &Path) -> Option<String> {
    let c = command.trim();
    if c == "cargo build --release"
        || c == "bash scripts/test.sh"
        || c.starts_with("alias wirebench=")
    {
        return None;
    }
    if let Some(rest) = c.strip_prefix("cargo run --release -p wirebench --") {
        return Some(format!("{}{rest}", bin.display()));
    }
    Some(c.to_string())
}

fn stop(mut child: Child) {
    // SAFETY: signalling a child we started, by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Runs `command` in `dir`; Err with its output when it fails or overruns.
fn run_one(command: &str, dir: &Path, path_env: &str, limit: Duration) -> Result<Duration, String> {
    let log = dir.join(".docs-test.log");
    let file = std::fs::File::create(&log).unwrap();
    let mut child = Command::new("bash")
        .args(["-c", command])
        .current_dir(dir)
        .env("PATH", path_env)
        .env("COLUMNS", "100")
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .spawn()
        .map_err(|e| format!("cannot start bash: {e}"))?;
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let output = std::fs::read_to_string(&log).unwrap_or_default();
            let _ = std::fs::remove_file(&log);
            return if status.success() {
                Ok(t0.elapsed())
            } else {
                Err(format!("exited with {status}:\n{}", tail(&output)))
            };
        }
        if t0.elapsed() > limit {
            stop(child);
            let output = std::fs::read_to_string(&log).unwrap_or_default();
            return Err(format!(
                "still running after {:?}: state how long it takes, shrink it with \
                 (docs test: ...) or raise its (docs test: limit ...):\n{}",
                limit,
                tail(&output)
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

#[test]
fn directives_parse() {
    let (c, a) =
        parse_line("wirebench run x   # about 45 min (docs test: --part a --rounds 3)").unwrap();
    assert_eq!(c, "wirebench run x");
    assert_eq!(
        a,
        Action::Run {
            extra: "--part a --rounds 3".into(),
            limit: DEFAULT_LIMIT,
            full: false,
        }
    );
    let (c, a) = parse_line("wirebench run --columns 'a#b' # x").unwrap();
    assert_eq!(c, "wirebench run --columns 'a#b'");
    assert!(matches!(a, Action::Run { .. }));
    assert_eq!(
        parse_line("wirebench serve   # terminal 1 (docs test: background)")
            .unwrap()
            .1,
        Action::Background
    );
    assert!(parse_line("x # (docs test: skip)").is_err());
    assert_eq!(
        parse_line("x # (docs test: limit 5m)").unwrap().1,
        Action::Run {
            extra: String::new(),
            limit: Duration::from_secs(300),
            full: false,
        }
    );
    assert!(parse_line("x # (docs test: full)").is_err());
    assert_eq!(
        parse_line("x # ~9 min (docs test: full, the outage is the point)")
            .unwrap()
            .1,
        Action::Run {
            extra: String::new(),
            limit: FULL_LIMIT,
            full: true,
        }
    );
}

/// One documented line's outcome: what the test prints for it, and a failure if any.
struct Outcome {
    report: String,
    failure: Option<String>,
}

/// The test's view of the repository: the doc files, the binary on `PATH`.
struct DocsEnv {
    root: PathBuf,
    bin: PathBuf,
    path_env: String,
    _bindir: tempfile::TempDir,
}

impl DocsEnv {
    fn new() -> DocsEnv {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let root = root.canonicalize().unwrap();
        let bin = PathBuf::from(env!("CARGO_BIN_EXE_wirebench"));
        // `wirebench` on PATH is the binary under test.
        let bindir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(&bin, bindir.path().join("wirebench")).unwrap();
        let path_env = format!(
            "{}:{}",
            bindir.path().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        DocsEnv {
            root,
            bin,
            path_env,
            _bindir: bindir,
        }
    }

    /// The `--dry-run` estimate of a plain `wirebench run` line as the test would run it,
    /// in seconds; `None` for any other line.
    fn estimate(&self, full: &str, dir: &Path) -> Option<f64> {
        let plain = !full.contains(['&', '|', ';', '$']);
        if !full.starts_with("wirebench run ") || !plain || full.contains("--dry-run") {
            return None;
        }
        let out = Command::new("bash")
            .args(["-c", &format!("{full} --dry-run")])
            .current_dir(dir)
            .env("PATH", &self.path_env)
            .output()
            .ok()?;
        estimated(&String::from_utf8_lossy(&out.stderr)).map(|(_, _, t)| t)
    }

    /// Runs one block's lines in order in a fresh directory, its background servers
    /// stopped at the end.
    fn run_block(&self, block: &[Line]) -> Vec<Outcome> {
        let dir = tempfile::tempdir().unwrap();
        let mut background: Vec<Child> = Vec::new();
        let mut out = Vec::new();
        for l in block {
            let Some(cmd) = rewrite(&l.command, &self.bin) else {
                continue;
            };
            let at = format!("{}:{}", l.file, l.line);
            let report = |report: String, failure: Option<String>| Outcome { report, failure };
            match &l.action {
                Action::Skip(why) => {
                    out.push(report(format!("docs: {at}: skipped ({why}): {cmd}"), None))
                }
                Action::Background => {
                    // `server &` in a doc means the same; the test keeps the pid.
                    let cmd = cmd.trim_end().trim_end_matches('&').trim_end();
                    let child = Command::new("bash")
                        .args(["-c", &format!("exec {cmd}")])
                        .current_dir(dir.path())
                        .env("PATH", &self.path_env)
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .unwrap();
                    background.push(child);
                    // Give a server time to bind before the next line uses it.
                    std::thread::sleep(Duration::from_secs(1));
                    out.push(report(
                        format!("docs: {at}: in the background: {cmd}"),
                        None,
                    ));
                }
                Action::Run { extra, limit, full } => {
                    let line = if extra.is_empty() {
                        cmd.clone()
                    } else {
                        format!("{cmd} {extra}")
                    };
                    let est = self.estimate(&line, dir.path());
                    if let Some(t) = est.filter(|t| *t > SHORT_FORM_SECS && !*full) {
                        out.push(report(
                            format!("docs: {at}: FAILED: {line}"),
                            Some(format!(
                                "{at}: `{line}` is estimated at {t:.0} s: the docs test runs a \
                                 short form (at most {SHORT_FORM_SECS:.0} s), so shrink it with \
                                 (docs test: --rounds N) or the like, or mark it \
                                 (docs test: full, WHY) when its length is the point"
                            )),
                        ));
                        continue;
                    }
                    out.push(match run_one(&line, dir.path(), &self.path_env, *limit) {
                        Ok(t) => report(
                            format!("docs: {at}: ok in {:.1}s: {line}", t.as_secs_f64()),
                            None,
                        ),
                        Err(e) => report(
                            format!("docs: {at}: FAILED: {line}"),
                            Some(format!("{at}: `{line}` {e}")),
                        ),
                    });
                }
            }
        }
        for child in background {
            stop(child);
        }
        out
    }
}

/// How many blocks run at once (`WIREBENCH_DOCS_JOBS`, default 3: the serial lane and two
/// others). Most documented commands wait on an emulated link, not on the CPU, so blocks
/// overlap well; the test holds two of the suite's slots (.config/nextest.toml).
fn docs_jobs() -> usize {
    std::env::var("WIREBENCH_DOCS_JOBS")
        .ok()
        .and_then(|j| j.parse().ok())
        .filter(|j| *j > 0)
        .unwrap_or(3)
}

#[test]
fn every_documented_command_works_as_written() {
    let env = DocsEnv::new();
    let only = std::env::var("WIREBENCH_DOCS_ONLY").ok();
    // A block that starts a server binds the port its doc names, and two docs may name
    // the same one; a block that starts real XMPP servers (Erlang's and Lua's VMs take
    // seconds of CPU to start) would starve another doing the same. Such blocks take
    // turns in one lane; the rest run beside it. Labs need no turn: each run's
    // namespaces are named after its process.
    let (mut serial, mut parallel) = (Vec::new(), Vec::new());
    for (path, name) in doc_files(&env.root) {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        for block in blocks(&path, &name) {
            let turn = |l: &Line| {
                l.action == Action::Background
                    || ["--xmpp-server", "browser-transports", "s4-tigase"]
                        .iter()
                        .any(|w| l.command.contains(w))
            };
            if block.iter().any(turn) {
                serial.push(block);
            } else {
                parallel.push(block);
            }
        }
    }
    let ran = serial
        .iter()
        .chain(&parallel)
        .flatten()
        .filter(|l| {
            matches!(l.action, Action::Run { .. }) && rewrite(&l.command, &env.bin).is_some()
        })
        .count();
    assert!(ran > 0 || only.is_some(), "no documented command found");
    let parallel = std::sync::Mutex::new(parallel.into_iter());
    let failures = std::sync::Mutex::new(Vec::new());
    let t0 = Instant::now();
    let record = |outcomes: Vec<Outcome>| {
        for o in outcomes {
            eprintln!("{}", o.report);
            failures.lock().unwrap().extend(o.failure);
        }
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            for block in &serial {
                record(env.run_block(block));
            }
        });
        for _ in 1..docs_jobs() {
            s.spawn(|| {
                loop {
                    let next = parallel.lock().unwrap().next();
                    let Some(block) = next else { break };
                    record(env.run_block(&block));
                }
            });
        }
    });
    eprintln!(
        "docs: {ran} documented commands in {:.0} s",
        t0.elapsed().as_secs_f64()
    );
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} documented command(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// What a comment claims of a run: "6 cases" (the count before "cases", repeats
/// included) and "~2 min" or "about 90 s" (the last such time), directives left out.
fn claims(comment: &str) -> (Option<u64>, Option<f64>) {
    let text = match comment.find("(docs test:") {
        Some(i) => &comment[..i],
        None => comment,
    };
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ',' || c == ';')
        .filter(|w| !w.is_empty())
        .collect();
    let mut cases = None;
    let mut secs = None;
    for (i, w) in words.iter().enumerate() {
        if *w == "cases" && i >= 1 {
            // "72 stream cases": the number may stand one word before.
            cases = words[i - 1]
                .parse()
                .ok()
                .or_else(|| i.checked_sub(2).and_then(|j| words[j].parse().ok()));
        }
        let number = match w.strip_prefix('~') {
            Some(n) => n,
            None if i >= 1 && words[i - 1] == "about" => w,
            None => continue,
        };
        let (n, unit) = match number.find(|c: char| !c.is_ascii_digit() && c != '.') {
            Some(at) => (&number[..at], &number[at..]),
            None => (number, words.get(i + 1).copied().unwrap_or("")),
        };
        let scale = match unit {
            "s" | "sec" | "seconds" => 1.0,
            "min" | "minute" | "minutes" | "m" => 60.0,
            "h" | "hour" | "hours" => 3600.0,
            _ => continue,
        };
        if let Ok(v) = n.parse::<f64>() {
            secs = Some(v * scale);
        }
    }
    (cases, secs)
}

/// `wirebench: 72 cases x 3, estimated 4m51s` -> (72, 216, 291.0): the cases, the runs
/// of all of them, the time; `58 cases, 126 runs, estimated ...` where parts repeat
/// their cases more than others.
fn estimated(stderr: &str) -> Option<(u64, u64, f64)> {
    let line = stderr.lines().find(|l| l.contains(", estimated "))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let cases: u64 = words.get(1)?.parse().ok()?;
    let runs: u64 = match words.get(3) {
        Some(&"x") => cases * words.get(4)?.trim_end_matches(',').parse::<u64>().ok()?,
        _ => words.get(3)?.parse().ok()?,
    };
    let t = line.rsplit(", estimated ").next()?.trim();
    let mut secs = 0.0;
    let mut num = String::new();
    for c in t.chars() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        let unit = match c {
            'd' => 86_400.0,
            'h' => 3600.0,
            'm' => 60.0,
            's' => 1.0,
            _ => return None,
        };
        secs += num.parse::<f64>().ok()? * unit;
        num.clear();
    }
    Some((cases, runs, secs))
}

#[test]
fn claims_are_read() {
    assert_eq!(claims(" 6 cases, ~2 min"), (Some(6), Some(120.0)));
    assert_eq!(
        claims(" 72 stream cases, about 90 s  (docs test: limit 5m)"),
        (Some(72), Some(90.0))
    );
    assert_eq!(
        claims(" about 1,000 sessions over 5 s, each staying 10 s; ~20 s"),
        (None, Some(20.0))
    );
    assert_eq!(
        claims(" ~1.5 min (docs test: --dry-run)"),
        (None, Some(90.0))
    );
    assert_eq!(claims(" terminal 2"), (None, None));
    assert_eq!(
        estimated("wirebench: 72 cases x 3, estimated 4m51s\n"),
        Some((72, 216, 291.0))
    );
    assert_eq!(
        estimated("wirebench: 58 cases, 126 runs, estimated 12m07s"),
        Some((58, 126, 727.0))
    );
    assert_eq!(
        table_claim(
            "| S3 | `wirebench run proxy-ttfb` and `wirebench run proxy-delays` (root) | ~1.5 + 2.5 min | x |"
        ),
        Some((
            vec![
                "wirebench run proxy-ttfb".to_string(),
                "wirebench run proxy-delays".to_string()
            ],
            240.0
        ))
    );
    assert_eq!(
        table_claim("| S1 | `wirebench run satcom-irc` (root) | ~4 min | IRC |"),
        Some((vec!["wirebench run satcom-irc".to_string()], 240.0))
    );
    assert_eq!(table_claim("| a | `wirebench run x` | b |"), None);
    assert_eq!(
        estimated("wirebench: 1 case x 1, estimated 2.5s"),
        Some((1, 1, 2.5))
    );
    assert_eq!(
        estimated("wirebench: 6 cases x 1, estimated 1h02m"),
        Some((6, 6, 3720.0))
    );
}

/// A stated time agrees with the estimate when within this share of it (or 3 s): close
/// enough for "~5 min" against 4m45s, too close for two texts to give one command two
/// different times (satcom-xmpp's 50 and 55 min).
const TIME_TOLERANCE: f64 = 0.25;

/// A study table's row (README.md): the `wirebench run` commands of one cell and the time
/// another cell gives for all of them (`~1.5 + 2.5 min`, summed).
fn table_claim(line: &str) -> Option<(Vec<String>, f64)> {
    if !line.trim_start().starts_with('|') {
        return None;
    }
    let cells: Vec<&str> = line.split('|').map(str::trim).collect();
    let commands: Vec<String> = cells
        .iter()
        .flat_map(|c| c.split('`').skip(1).step_by(2))
        .filter(|c| c.starts_with("wirebench run "))
        .map(str::to_string)
        .collect();
    let time = cells.iter().find_map(|c| {
        let rest = c.strip_prefix('~')?;
        let (numbers, unit) = rest.rsplit_once(' ')?;
        let scale = match unit {
            "s" => 1.0,
            "min" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        numbers
            .split('+')
            .map(|n| n.trim().parse::<f64>().ok())
            .sum::<Option<f64>>()
            .map(|n| n * scale)
    })?;
    (!commands.is_empty()).then_some((commands, time))
}

/// The case counts and times the docs give beside `wirebench run` commands (a comment in
/// a code block, or a row of a study table), against the commands' own estimates
/// (`--dry-run`): a count must be the plan's cases or runs, a time within
/// [`TIME_TOLERANCE`] of the estimate, so no text can drift from the tool or from
/// another text. The estimates are themselves checked against recorded runs
/// (app/plan/tests/estimates.rs).
#[test]
fn documented_case_counts_and_times_are_the_estimates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = root.canonicalize().unwrap();
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_wirebench"));
    let bindir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&bin, bindir.path().join("wirebench")).unwrap();
    let path_env = format!(
        "{}:{}",
        bindir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let dry_run = |command: &str| {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("bash")
            .args(["-c", &format!("{command} --dry-run")])
            .current_dir(dir.path())
            .env("PATH", &path_env)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        estimated(&stderr).ok_or(stderr)
    };
    let off = |said: f64, t: f64| (t - said).abs() > (TIME_TOLERANCE * t).max(3.0);
    let mut wrong = Vec::new();
    let mut checked = 0;
    for (path, name) in doc_files(&root) {
        for l in blocks(&path, &name).into_iter().flatten() {
            let (cases, secs) = claims(&l.comment);
            let plain = !l.command.contains(['&', '|', ';', '$']);
            if !l.command.starts_with("wirebench run ") || !plain || (cases, secs) == (None, None) {
                continue;
            }
            let at = format!("{}:{}: `{}`", l.file, l.line, l.command);
            let (n, runs, t) = match dry_run(&l.command) {
                Ok(e) => e,
                Err(stderr) => {
                    wrong.push(format!("{at}: no estimate in {stderr}"));
                    continue;
                }
            };
            checked += 1;
            // "72 cases" of a run repeated 3 times, or "216 cases" for all the runs.
            if let Some(c) = cases.filter(|c| *c != n && *c != runs) {
                wrong.push(format!("{at}: says {c} cases, plans {n} ({runs} runs)"));
            }
            if let Some(s) = secs.filter(|s| off(*s, t)) {
                wrong.push(format!("{at}: says ~{s:.0} s, estimated {t:.0} s"));
            }
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            let Some((commands, said)) = table_claim(line) else {
                continue;
            };
            let at = format!("{name}:{}: {}", i + 1, commands.join(" and "));
            let mut t = 0.0;
            for c in &commands {
                match dry_run(c) {
                    Ok((_, _, secs)) => t += secs,
                    Err(stderr) => wrong.push(format!("{at}: no estimate in {stderr}")),
                }
            }
            checked += 1;
            if off(said, t) {
                wrong.push(format!("{at}: says ~{said:.0} s, estimated {t:.0} s"));
            }
        }
    }
    assert!(checked > 20, "only {checked} documented claims found");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A doc stands alone in a clone: it names no path outside the repository (a sibling
/// checkout's `../shared`, one machine's `/work/...`, `/home/...` or `/tmp/...` files).
/// System paths (`/proc`, `/usr/sbin`, `/run/netns`) are facts of any Linux machine.
#[test]
fn docs_name_no_path_outside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut found = Vec::new();
    for (path, name) in doc_files(&root) {
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            for bad in ["../shared", "/work/", "/home/", "/root/", "/tmp/"] {
                let outside = line.match_indices(bad).any(|(at, _)| {
                    // `/tmp/` inside a longer path (`target/tmp/`) is the repository's.
                    bad.starts_with("..")
                        || at == 0
                        || !line[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_')
                });
                if outside {
                    found.push(format!("{name}:{}: {bad}: {}", i + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "docs name paths outside the repository (a reader of the clone has none of them):\n{}",
        found.join("\n")
    );
}
