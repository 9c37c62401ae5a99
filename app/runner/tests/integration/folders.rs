//! The house rules that `cargo metadata` cannot see (docs/architecture.md): fuzz targets
//! live beside the crate whose parser they fuzz, each fuzz directory's manifest lists its
//! targets and docs/architecture.md's fuzzing policy names none without one; and a
//! protocol's folder is all of it: nothing outside `protocols/<name>/` names its crates or
//! its folder but the one registry line in app/plan/Cargo.toml (and Cargo.lock files,
//! docs, scenarios and READMEs, which are data a user reads). MQTT, the protocol added to
//! prove the shape, must keep it; for the others this test prints what still sits
//! outside, without failing, so the next session sees it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// `path` relative to the repository, with `/` separators.
fn rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// Whether no rule is about what is in `dir`: build output, git's and npm's files,
/// fuzzing's inputs and findings (binary), runs' results.
fn skipped(dir: &Path) -> bool {
    let name = dir.file_name().unwrap().to_string_lossy();
    let parent = dir.parent().and_then(Path::file_name);
    matches!(&*name, "target" | ".git" | "node_modules")
        || (parent.is_some_and(|p| p == "fuzz") && matches!(&*name, "corpus" | "artifacts"))
        || (dir.parent() == Some(&root()) && matches!(&*name, "runs" | "wirebench-runs"))
}

/// Every file under `dir`, in path order, but in [`skipped`] directories.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if !skipped(&path) {
                files(&path, out);
            }
        } else {
            out.push(path);
        }
    }
}

/// A cargo-fuzz directory: where it is, the `[[bin]]` names its manifest lists, and the
/// target sources in its `fuzz_targets/`.
#[derive(Debug)]
struct FuzzDir {
    dir: String,
    bins: BTreeSet<String>,
    sources: BTreeSet<String>,
}

/// Every `*/fuzz/Cargo.toml` with `cargo-fuzz = true` (what scripts/fuzz.sh runs).
fn fuzz_dirs(root: &Path) -> Vec<FuzzDir> {
    let mut all = Vec::new();
    files(root, &mut all);
    let mut out = Vec::new();
    for manifest in all {
        let dir = manifest.parent().unwrap();
        if manifest.file_name().unwrap() != "Cargo.toml" || dir.file_name().unwrap() != "fuzz" {
            continue;
        }
        let text = std::fs::read_to_string(&manifest).unwrap();
        let toml: toml::Table = text.parse().unwrap();
        let is_fuzz = toml
            .get("package")
            .and_then(|p| p.get("metadata"))
            .and_then(|m| m.get("cargo-fuzz"))
            .and_then(toml::Value::as_bool)
            == Some(true);
        if !is_fuzz {
            continue;
        }
        let bins = toml
            .get("bin")
            .and_then(toml::Value::as_array)
            .into_iter()
            .flatten()
            .map(|b| b["name"].as_str().unwrap().to_string())
            .collect();
        let sources = std::fs::read_dir(dir.join("fuzz_targets"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.strip_suffix(".rs").map(str::to_string)
            })
            .collect();
        out.push(FuzzDir {
            dir: rel(root, dir),
            bins,
            sources,
        });
    }
    out
}

/// The targets docs/architecture.md's "## Fuzzing" section names: each as `` `name` (what
/// it reads) ``, in its first paragraph.
fn policy_targets(architecture: &str) -> Vec<String> {
    let section = architecture
        .split("\n## Fuzzing\n")
        .nth(1)
        .expect("docs/architecture.md has a \"## Fuzzing\" section");
    let paragraph = section.trim_start().split("\n\n").next().unwrap();
    let mut out = Vec::new();
    for piece in paragraph.split('`').skip(1).step_by(2).zip(
        paragraph
            .split('`')
            .skip(2)
            .step_by(2)
            .map(|after| after.trim_start().starts_with('(')),
    ) {
        let (name, parenthesis) = piece;
        if parenthesis
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            out.push(name.to_string());
        }
    }
    out
}

/// What is wrong with the fuzz directories against the policy: a target the policy names
/// that no directory has, a target source its manifest does not list (cargo fuzz would
/// not build it) or the reverse, a target the policy does not name, a name in two places.
fn fuzz_problems(policy: &[String], dirs: &[FuzzDir]) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for d in dirs {
        for s in d.sources.difference(&d.bins) {
            out.push(format!(
                "{}/fuzz_targets/{s}.rs is not a [[bin]] of {}/Cargo.toml",
                d.dir, d.dir
            ));
        }
        for b in d.bins.difference(&d.sources) {
            out.push(format!(
                "{}/Cargo.toml lists {b}, which has no fuzz_targets/{b}.rs",
                d.dir
            ));
        }
        for b in &d.bins {
            if !seen.insert(b) {
                out.push(format!("{b} is a target of two fuzz directories"));
            }
            if !policy.contains(b) {
                out.push(format!(
                    "{}'s target {b} is not named in docs/architecture.md's fuzzing policy",
                    d.dir
                ));
            }
        }
    }
    for p in policy {
        if !seen.contains(p.as_str()) {
            out.push(format!(
                "docs/architecture.md's fuzzing policy names {p}, which no fuzz directory has"
            ));
        }
    }
    out
}

#[test]
fn every_fuzzed_parser_has_a_target_its_manifest_lists() {
    let root = root();
    let architecture = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let policy = policy_targets(&architecture);
    let dirs = fuzz_dirs(&root);
    // The section and the tree were read at all: a broken reader must not pass silently.
    assert!(
        policy.len() >= 20 && policy.contains(&"mqtt_client".to_string()),
        "{policy:?}"
    );
    assert!(
        dirs.iter()
            .any(|d| d.dir == "protocols/mqtt/engine/fuzz" && d.bins.contains("mqtt_client")),
        "{dirs:#?}"
    );
    let problems = fuzz_problems(&policy, &dirs);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_missing_target_or_manifest_line_is_caught() {
    let set = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    let policy = policy_targets(
        "x\n## Fuzzing\n\nTargets: `a` (one), `b` (two), and `cargo fuzz` is the tool.\n\n`c` (later)\n",
    );
    assert_eq!(policy, ["a", "b"]);
    let dir = |bins: &[&str], sources: &[&str]| FuzzDir {
        dir: "p/engine/fuzz".into(),
        bins: set(bins),
        sources: set(sources),
    };
    assert!(fuzz_problems(&policy, &[dir(&["a", "b"], &["a", "b"])]).is_empty());
    // The policy's `b` has no target anywhere.
    let p = fuzz_problems(&policy, &[dir(&["a"], &["a"])]);
    assert_eq!(
        p,
        ["docs/architecture.md's fuzzing policy names b, which no fuzz directory has"]
    );
    // `b.rs` is there but the manifest does not list it.
    let p = fuzz_problems(&policy, &[dir(&["a"], &["a", "b"])]);
    assert!(p[0].contains("fuzz_targets/b.rs is not a [[bin]]"), "{p:?}");
}

/// The names a protocol folder's crates go by, as dependencies and in code
/// (`wirebench-mqtt`, `wirebench_mqtt`), each with whether it is an engine (which other
/// protocols may use: tiers.rs allows that edge).
fn crate_names(root: &Path, folder: &Path) -> Vec<(String, bool)> {
    let mut all = Vec::new();
    files(folder, &mut all);
    let mut out = Vec::new();
    for manifest in all
        .iter()
        .filter(|f| f.file_name().unwrap() == "Cargo.toml")
    {
        let toml: toml::Table = std::fs::read_to_string(manifest).unwrap().parse().unwrap();
        let Some(name) = toml.get("package").and_then(|p| p["name"].as_str()) else {
            continue;
        };
        let part = rel(root, manifest.parent().unwrap());
        let engine = part.split('/').nth(2) == Some("engine");
        out.push((name.to_string(), engine));
        out.push((name.replace('-', "_"), engine));
    }
    out
}

/// Whether `text` has `word` not followed by more of a name (`wirebench-xmpp` is not in
/// `wirebench-xmpp-web`; `protocols/raw` is in `protocols/raw/engine`).
fn names(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        !text[i + word.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    })
}

/// The manifest whose `wirebench-plugin-*` lines make the registry (app/plan/build.rs):
/// the one place outside a protocol's folder that names it.
const REGISTRY_MANIFEST: &str = "app/plan/Cargo.toml";

/// Files outside `protocols/<name>/` that name its crates or its folder, with what they
/// name; user-facing data and the one registry line aside.
fn outside_mentions(root: &Path, name: &str, all: &[PathBuf]) -> Vec<String> {
    let folder = root.join("protocols").join(name);
    let crates = crate_names(root, &folder);
    let folder_word = format!("protocols/{name}");
    let registry_line = format!("wirebench-plugin-{name} =");
    let mut out = Vec::new();
    for file in all {
        let path = rel(root, file);
        let base = file.file_name().unwrap().to_string_lossy();
        if file.starts_with(&folder)
            || base == "Cargo.lock"
            || base.starts_with("README")
            || path.starts_with("docs/")
            || path.starts_with("scenarios/")
        {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(file) else {
            continue; // not text
        };
        // Another protocol may use an engine (tiers.rs allows that edge).
        let in_protocol = path.starts_with("protocols/");
        let mut found: BTreeSet<&str> = BTreeSet::new();
        for line in text.lines() {
            if path == REGISTRY_MANIFEST && line.starts_with(&registry_line) {
                continue;
            }
            for (c, engine) in &crates {
                if !(in_protocol && *engine) && names(line, c) {
                    found.insert(c);
                }
            }
            if names(line, &folder_word) {
                found.insert(&folder_word);
            }
        }
        if !found.is_empty() {
            let found: Vec<&str> = found.into_iter().collect();
            out.push(format!("{path}: {}", found.join(", ")));
        }
    }
    out
}

#[test]
fn a_protocol_folder_is_all_of_it() {
    let root = root();
    let mut all = Vec::new();
    files(&root, &mut all);
    let mut protocols: Vec<String> = std::fs::read_dir(root.join("protocols"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    protocols.sort();
    assert!(protocols.contains(&"mqtt".to_string()), "{protocols:?}");
    // This test names mqtt to check it; it is not part of any protocol.
    let this = root.join(file!());
    all.retain(|f| *f != this);
    let mut mqtt = Vec::new();
    for name in &protocols {
        let outside = outside_mentions(&root, name, &all);
        if name == "mqtt" {
            mqtt = outside;
        } else if !outside.is_empty() {
            println!("protocols/{name}/ is named outside its folder (to move in):");
            for o in &outside {
                println!("  {o}");
            }
        }
    }
    assert!(
        mqtt.is_empty(),
        "adding mqtt must touch only protocols/mqtt/ and its registry line; also:\n{}",
        mqtt.join("\n")
    );
}

#[test]
fn a_mention_outside_the_folder_is_found() {
    let root = root();
    let dir = tempfile::tempdir().unwrap();
    let stray = dir.path().join("stray.rs");
    std::fs::write(&stray, "use wirebench_mqtt::fuzz_input;\n").unwrap();
    let found = outside_mentions(&root, "mqtt", &[stray]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].ends_with("stray.rs: wirebench_mqtt"), "{found:?}");
    // The registry line alone is allowed, and a longer name is another crate.
    let registry = root.join(REGISTRY_MANIFEST);
    assert!(outside_mentions(&root, "mqtt", std::slice::from_ref(&registry)).is_empty());
    // ... there only: the same line in another manifest is a mention.
    let elsewhere = dir.path().join("Cargo.toml");
    std::fs::copy(&registry, &elsewhere).unwrap();
    let found = outside_mentions(&root, "mqtt", &[elsewhere]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(!names("wirebench-mqtt-x = 1", "wirebench-mqtt"));
    assert!(names("path = \"protocols/mqtt/engine\"", "protocols/mqtt"));
}
