//! Makes two lists that would otherwise be kept by hand:
//!
//! - the protocol registry (`registry.rs` in OUT_DIR): every `wirebench-plugin-*`
//!   dependency in this crate's Cargo.toml, in the order written there, each crate's
//!   `PLUGIN`. Adding a protocol is its folder under `protocols/` (a plugin crate whose
//!   lib.rs has `pub static PLUGIN: &dyn Protocol`) and one line in Cargo.toml;
//! - the built-in scenarios (`scenarios.rs`): every `scenarios/*.toml` of the repository,
//!   by file stem, `default` first and the others by name, embedded in the binary.

use std::fmt::Write;
use std::path::{Path, PathBuf};

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    std::fs::write(out.join("registry.rs"), registry(&dir.join("Cargo.toml")))
        .expect("writing registry.rs");
    let scenarios = dir.join("../../scenarios");
    std::fs::write(out.join("scenarios.rs"), builtin(&scenarios)).expect("writing scenarios.rs");
    println!("cargo:rerun-if-changed=Cargo.toml");
    println!("cargo:rerun-if-changed={}", scenarios.display());
}

/// `pub static REGISTRY` from the manifest's plugin dependencies.
fn registry(manifest: &Path) -> String {
    let text = std::fs::read_to_string(manifest).expect("reading Cargo.toml");
    let doc: toml::Table = toml::from_str(&text).expect("Cargo.toml");
    let deps = doc
        .get("dependencies")
        .and_then(|d| d.as_table())
        .expect("[dependencies]");
    let mut s = String::from(
        "/// Every protocol, in the order of their lines in Cargo.toml (made by build.rs).\n\
         pub static REGISTRY: &[&dyn Protocol] = &[\n",
    );
    let mut n = 0;
    for name in deps.keys().filter(|k| k.starts_with("wirebench-plugin-")) {
        writeln!(s, "    {}::PLUGIN,", name.replace('-', "_")).unwrap();
        n += 1;
    }
    assert!(
        n > 0,
        "no wirebench-plugin-* dependency in {}",
        manifest.display()
    );
    s.push_str("];\n");
    s
}

/// `pub const BUILTIN` from the scenario files.
fn builtin(dir: &Path) -> String {
    let mut files: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .filter_map(|p| {
            let stem = p.file_stem()?.to_str()?.to_string();
            Some((stem, std::fs::canonicalize(&p).ok()?))
        })
        .collect();
    files.sort_by(|a, b| (a.0 != "default", &a.0).cmp(&(b.0 != "default", &b.0)));
    let mut s = String::from(
        "/// Built-in scenarios, by name: scenarios/*.toml, `default` first (made by build.rs).\n\
         pub const BUILTIN: &[(&str, &str)] = &[\n",
    );
    for (stem, path) in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        writeln!(
            s,
            "    ({stem:?}, include_str!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    s.push_str("];\n");
    s
}
