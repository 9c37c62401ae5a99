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
//! - `(docs test: ARGS)`: anything else is appended to the command, shrinking it (flags
//!   given twice: the last wins).
//!
//! Four lines are understood without a comment, because this test already stands where
//! they lead: `cargo build --release` (the binary is built), `alias wirebench=...` (it is
//! on `PATH`), `bash scripts/test.sh` (this is part of it) and the `cargo run --release
//! -p wirebench --` prefix, which is replaced by the binary.
//!
//! Lab commands need root, like the rest of the suite.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, PartialEq)]
enum Action {
    Run { extra: String, limit: Duration },
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
        },
        Some(d) if d == "background" => Action::Background,
        Some(d) if d.starts_with("skip") => {
            let why = d.trim_start_matches("skip").trim_start_matches(',').trim();
            if why.is_empty() {
                return Err("a skip must say why: (docs test: skip, REASON)".into());
            }
            Action::Skip(why.to_string())
        }
        Some(d) if d.starts_with("limit ") => {
            let t = d["limit ".len()..].trim();
            let limit = wirebench_duration(t).ok_or(format!("bad limit {t:?}"))?;
            Action::Run {
                extra: String::new(),
                limit,
            }
        }
        Some(d) => Action::Run {
            extra: d,
            limit: DEFAULT_LIMIT,
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
            limit: DEFAULT_LIMIT
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
            limit: Duration::from_secs(300)
        }
    );
}

#[test]
fn every_documented_command_works_as_written() {
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
    let only = std::env::var("WIREBENCH_DOCS_ONLY").ok();
    let mut failures = Vec::new();
    let mut ran = 0;
    for (path, name) in doc_files(&root) {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        for block in blocks(&path, &name) {
            let dir = tempfile::tempdir().unwrap();
            let mut background: Vec<Child> = Vec::new();
            for l in block {
                let Some(cmd) = rewrite(&l.command, &bin) else {
                    continue;
                };
                let at = format!("{}:{}", l.file, l.line);
                match &l.action {
                    Action::Skip(why) => eprintln!("docs: {at}: skipped ({why}): {cmd}"),
                    Action::Background => {
                        // `server &` in a doc means the same; the test keeps the pid.
                        let cmd = cmd.trim_end().trim_end_matches('&').trim_end();
                        eprintln!("docs: {at}: in the background: {cmd}");
                        let child = Command::new("bash")
                            .args(["-c", &format!("exec {cmd}")])
                            .current_dir(dir.path())
                            .env("PATH", &path_env)
                            .stdin(Stdio::null())
                            .stdout(Stdio::null())
                            .stderr(Stdio::null())
                            .spawn()
                            .unwrap();
                        background.push(child);
                        // Give a server time to bind before the next line uses it.
                        std::thread::sleep(Duration::from_secs(1));
                    }
                    Action::Run { extra, limit } => {
                        let full = if extra.is_empty() {
                            cmd.clone()
                        } else {
                            format!("{cmd} {extra}")
                        };
                        ran += 1;
                        match run_one(&full, dir.path(), &path_env, *limit) {
                            Ok(t) => eprintln!("docs: {at}: ok in {:.1}s: {full}", t.as_secs_f64()),
                            Err(e) => {
                                eprintln!("docs: {at}: FAILED: {full}");
                                failures.push(format!("{at}: `{full}` {e}"));
                            }
                        }
                    }
                }
            }
            for child in background {
                stop(child);
            }
        }
    }
    assert!(ran > 0 || only.is_some(), "no documented command found");
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

/// `wirebench: 72 cases x 3, estimated 4m51s` -> (72, 3, 291.0).
fn estimated(stderr: &str) -> Option<(u64, u64, f64)> {
    let line = stderr.lines().find(|l| l.contains(", estimated "))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let cases: u64 = words.get(1)?.parse().ok()?;
    let repeat: u64 = words.get(4)?.trim_end_matches(',').parse().ok()?;
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
    Some((cases, repeat, secs))
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
        Some((72, 3, 291.0))
    );
    assert_eq!(
        estimated("wirebench: 1 case x 1, estimated 2.5s"),
        Some((1, 1, 2.5))
    );
    assert_eq!(
        estimated("wirebench: 6 cases x 1, estimated 1h02m"),
        Some((6, 1, 3720.0))
    );
}

/// The case counts and times the docs give beside `wirebench run` commands, against the
/// command's own estimate (`--dry-run`): a count must be the plan's, a time within 2x of
/// the estimate (or 3 s of it), so neither can drift from the tool. The estimates are
/// themselves checked against recorded runs (app/plan/tests/estimates.rs).
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
    let mut wrong = Vec::new();
    let mut checked = 0;
    for (path, name) in doc_files(&root) {
        for l in blocks(&path, &name).into_iter().flatten() {
            let (cases, secs) = claims(&l.comment);
            let plain = !l.command.contains(['&', '|', ';', '$']);
            if !l.command.starts_with("wirebench run ") || !plain || (cases, secs) == (None, None) {
                continue;
            }
            let dir = tempfile::tempdir().unwrap();
            let out = Command::new("bash")
                .args(["-c", &format!("{} --dry-run", l.command)])
                .current_dir(dir.path())
                .env("PATH", &path_env)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            let at = format!("{}:{}: `{}`", l.file, l.line, l.command);
            let Some((n, repeat, t)) = estimated(&stderr) else {
                wrong.push(format!("{at}: no estimate in {stderr}"));
                continue;
            };
            checked += 1;
            // "72 cases" of a run repeated 3 times, or "216 cases" for all the runs.
            if let Some(c) = cases.filter(|c| *c != n && *c != n * repeat) {
                wrong.push(format!("{at}: says {c} cases, plans {n} x {repeat}"));
            }
            if let Some(s) = secs.filter(|s| (t > 2.0 * s || t < s / 2.0) && (t - s).abs() > 3.0) {
                wrong.push(format!("{at}: says ~{s:.0} s, estimated {t:.0} s"));
            }
        }
    }
    assert!(checked > 20, "only {checked} documented claims found");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
