//! `foundation/` knows no protocol (docs/architecture.md): no string in its code is a
//! protocol's name or one of its dotted parameter or metric names (`xmpp`,
//! `xmpp.first_delivery`). What a protocol wants the shared layers to know, it declares
//! through its plugin (`MetricSpec::chart`, `Protocol::legend_by_value`,
//! `Protocol::load_server`). Comments and test modules may name protocols: they are
//! examples, not knowledge.

use std::path::{Path, PathBuf};

/// The string literals of Rust source `text`, outside comments, up to its first
/// `#[cfg(test)]` (test modules close a file in this workspace).
fn literals(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                i += 2;
                while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                    i += 1;
                }
                i += 2;
            }
            // A char literal ('"', '\\', '\''), not a lifetime.
            '\'' if chars.get(i + 2) == Some(&'\'') => i += 3,
            '\'' if chars.get(i + 1) == Some(&'\\') && chars.get(i + 3) == Some(&'\'') => i += 4,
            '"' => {
                let mut s = String::new();
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    if let Some(&c) = chars.get(i) {
                        s.push(c);
                    }
                    i += 1;
                }
                out.push(s);
                i += 1;
            }
            _ => i += 1,
        }
    }
    out
}

/// The literals of `text` that name one of `protocols`.
fn names_of(text: &str, protocols: &[String]) -> Vec<String> {
    literals(text)
        .into_iter()
        .filter(|s| {
            protocols.iter().any(|p| {
                s == p
                    || s.strip_prefix(p.as_str())
                        .is_some_and(|rest| rest.starts_with('.'))
            })
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            // Integration tests and their fixtures may name protocols.
            if name != "tests" && name != "testdata" && name != "target" {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

#[test]
fn foundation_names_no_protocol() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut protocols: Vec<String> = std::fs::read_dir(root.join("protocols"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    protocols.sort();
    assert!(protocols.len() > 10, "protocol folders: {protocols:?}");
    let mut files = Vec::new();
    rust_files(&root.join("foundation"), &mut files);
    assert!(files.len() > 30, "foundation sources: {}", files.len());
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for name in names_of(&text, &protocols) {
            found.push(format!(
                "{}: {name:?}",
                f.strip_prefix(&root).unwrap().display()
            ));
        }
    }
    assert!(
        found.is_empty(),
        "foundation/ names protocols; declare it in the plugin instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_names_in_code_only() {
    let protocols = ["raw".to_string(), "xmpp".to_string()];
    let source = r#"
        // "xmpp.client" in a comment is fine, /* "raw" */ too.
        const C: char = '"';
        fn f<'a>(x: &'a str) -> &'a str { x.strip_prefix("xmpp.first_delivery").unwrap_or("raw") }
        const S: &str = "draw \"raw\" words: xmpp only";
        const T: &str = "xmpp-worker";
        #[cfg(test)]
        mod tests { const X: &str = "xmpp"; }
    "#;
    assert_eq!(names_of(source, &protocols), ["xmpp.first_delivery", "raw"]);
}
