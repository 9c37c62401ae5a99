//! The folders are the tiers (docs/architecture.md): `foundation/` knows no protocol,
//! `workloads/` builds on it, `protocols/<name>/` on both, `app/` on everything. A
//! workload family knows no protocol, so that the several protocols built on it stay
//! interchangeable. This test reads every workspace manifest's path dependencies
//! (`cargo metadata`) and fails on an edge that points up, on a protocol folder reaching
//! into another one other than through its engine crates, on a binary that depends on a
//! plugin, on a cycle between folders, and on a protocol or workload crate that reaches
//! the lab other than through the plugin interface's narrow handle. A last test fails on
//! a declared dependency that no source file of its crate names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const FOUNDATION: u8 = 0;
const WORKLOADS: u8 = 1;
const PROTOCOLS: u8 = 2;
const APP: u8 = 3;

/// Where a crate sits: its tier and its folder (`protocols/xmpp`, `foundation/model`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Place {
    tier: u8,
    folder: String,
    /// The crate's directory inside its folder (`engine`, `plugin`), empty at the top.
    part: String,
}

fn place(root: &Path, manifest_dir: &Path) -> Place {
    let rel = manifest_dir.strip_prefix(root).unwrap_or(manifest_dir);
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let (tier, width) = match parts.first().map(String::as_str) {
        Some("foundation") => (FOUNDATION, 2),
        Some("workloads") => (WORKLOADS, 2),
        Some("protocols") => (PROTOCOLS, 2),
        Some("app") => (APP, 2),
        _ => panic!("{} is outside the tier folders", rel.display()),
    };
    Place {
        tier,
        folder: parts[..width.min(parts.len())].join("/"),
        part: parts[width.min(parts.len())..].join("/"),
    }
}

/// A workspace crate: its name, its place, and its path dependencies' names and places.
type Crate = (String, Place, Vec<(String, Place)>);

/// The workspace's root and its `cargo metadata` (no dependencies' own).
fn metadata() -> (PathBuf, serde_json::Value) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = root.canonicalize().unwrap();
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(&root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (root, serde_json::from_slice(&out.stdout).unwrap())
}

/// Every workspace crate.
fn graph() -> Vec<Crate> {
    let (root, meta) = metadata();
    let mut crates = Vec::new();
    for p in meta["packages"].as_array().unwrap() {
        let dir = Path::new(p["manifest_path"].as_str().unwrap())
            .parent()
            .unwrap()
            .to_path_buf();
        let mut deps = Vec::new();
        for d in p["dependencies"].as_array().unwrap() {
            // Dev-dependencies may reach up (a test may drive the binary), build ones not.
            if d["kind"].as_str() == Some("dev") {
                continue;
            }
            if let Some(path) = d["path"].as_str() {
                deps.push((
                    d["name"].as_str().unwrap().to_string(),
                    place(&root, Path::new(path)),
                ));
            }
        }
        crates.push((
            p["name"].as_str().unwrap().to_string(),
            place(&root, &dir),
            deps,
        ));
    }
    crates
}

#[test]
fn imports_point_down_only() {
    let mut wrong = Vec::new();
    for (name, at, deps) in graph() {
        for (dep, to) in deps {
            let ok = match (at.tier, to.tier) {
                (FOUNDATION, FOUNDATION) => true,
                // A workload family: the foundation and the other families.
                (WORKLOADS, FOUNDATION | WORKLOADS) => true,
                // A protocol: the foundation, the workload families, its own folder,
                // another protocol's engine only.
                (PROTOCOLS, FOUNDATION | WORKLOADS) => true,
                (PROTOCOLS, PROTOCOLS) => to.folder == at.folder || to.part == "engine",
                // The binary reaches protocols only through the plan's registry.
                (APP, PROTOCOLS) => name != "wirebench",
                (APP, _) => true,
                _ => false,
            };
            if !ok {
                wrong.push(format!("{name} ({}) -> {dep} ({})", at.folder, to.folder));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "edges against the tiers:\n{}",
        wrong.join("\n")
    );
}

/// A protocol or workload crate reaches the lab only through the handle a case is given
/// (`wirebench_protocol::Hosts`: the hosts' addresses and namespaces, the link's
/// counters); building a lab, configuring its link and capturing it are the runner's.
/// A test that must build its own lab may have `wirebench-lab` as a dev-dependency.
#[test]
fn plugins_reach_the_lab_only_through_its_handle() {
    let wrong: Vec<String> = graph()
        .into_iter()
        .filter(|(_, at, _)| at.tier == WORKLOADS || at.tier == PROTOCOLS)
        .flat_map(|(name, at, deps)| {
            deps.into_iter()
                .filter(|(_, to)| to.folder == "foundation/lab")
                .map(move |(dep, _)| format!("{name} ({}) -> {dep}", at.folder))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "protocol or workload crates depending on the lab itself (use \
         wirebench_protocol::Hosts, from Env::lab):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_cycle_between_folders() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (_, at, deps) in graph() {
        for (_, to) in deps {
            if to.folder != at.folder {
                edges
                    .entry(at.folder.clone())
                    .or_default()
                    .insert(to.folder.clone());
            }
        }
    }
    // Depth-first search for a back edge.
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == n) {
            let mut cycle = path[i..].to_vec();
            cycle.push(n.to_string());
            return Some(cycle);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for n in edges.keys() {
        if let Some(c) = visit(n, &edges, &mut Vec::new(), &mut done) {
            panic!("a cycle between folders: {}", c.join(" -> "));
        }
    }
}

/// Dependencies whose library is named other than their package (`md-5` is `md5`).
const LIB_NAMES: &[(&str, &str)] = &[("md-5", "md5")];

/// The `.rs` files under `dir` (its `fuzz/` crate and build output aside), comments cut.
fn sources(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if !matches!(name.to_str(), Some("target" | "fuzz" | "node_modules")) {
                sources(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let code: String = text
                .lines()
                .map(|l| l.split("//").next().unwrap_or(""))
                .collect::<Vec<_>>()
                .join("\n");
            out.push((path, code));
        }
    }
}

/// Whether `code` names the crate `ident` as a whole word (`ident::`, `use ident`).
fn names(code: &str, ident: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(ident)
        .any(|(i, _)| !code[..i].ends_with(word) && !code[i + ident.len()..].starts_with(word))
}

/// A dependency no source names is compiled for nothing (and may hide an edge the
/// tiers forbid behind a test that only reads manifests). The plan's plugins are named
/// by the registry its build script writes from the manifest.
#[test]
fn every_declared_dependency_is_used() {
    let (_, meta) = metadata();
    let mut unused = Vec::new();
    for p in meta["packages"].as_array().unwrap() {
        let package = p["name"].as_str().unwrap();
        let dir = Path::new(p["manifest_path"].as_str().unwrap())
            .parent()
            .unwrap();
        let mut files = Vec::new();
        sources(dir, &mut files);
        for d in p["dependencies"].as_array().unwrap() {
            let name = d["name"].as_str().unwrap();
            if package == "wirebench-plan" && name.starts_with("wirebench-plugin-") {
                continue;
            }
            let ident = d["rename"].as_str().unwrap_or(name);
            let ident = LIB_NAMES
                .iter()
                .find(|(n, _)| *n == ident)
                .map_or(ident.replace('-', "_"), |(_, lib)| lib.to_string());
            // A normal dependency must be named by the library or binary sources, a
            // build one by build.rs; a dev one anywhere.
            let kind = d["kind"].as_str().unwrap_or("normal");
            let used = files.iter().any(|(path, code)| {
                let rel = path.strip_prefix(dir).unwrap();
                let fits = match kind {
                    "build" => rel == Path::new("build.rs"),
                    "dev" => true,
                    _ => rel.starts_with("src"),
                };
                fits && names(code, &ident)
            });
            if !used {
                unused.push(format!("{package}: {name} ({kind})"));
            }
        }
    }
    assert!(
        unused.is_empty(),
        "declared dependencies no source file names (remove them from Cargo.toml):\n{}",
        unused.join("\n")
    );
}
