//! Where in a TOML text a problem is: the line of a byte offset, the line of a dotted key,
//! and a `toml`/serde error turned into line, dotted key and a message worded like
//! wirebench's own (`unknown key (did you mean `dial`?); valid keys: ...`).
//!
//! Scenario files and the x2x gateway's configuration are read with serde; their errors
//! carry a byte span, which [`toml_error`] maps back to the key it belongs to.

use std::ops::Range;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// The 1-based line of a byte offset (offsets past the end count as the last line).
pub fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The line of a dotted key's value (`limits.queue_bytes`), or else of the nearest
/// enclosing table the text has (`[limits]`); `None` when not even the first part is in
/// the text, or the text is not TOML.
pub fn line_of_key(text: &str, dotted: &str) -> Option<usize> {
    let root = DeTable::parse(text).ok()?;
    let mut table = root.get_ref();
    let mut found: Option<Range<usize>> = None;
    for part in dotted.split('.') {
        let Some(v) = table.get(part) else { break };
        found = Some(v.span());
        match v.get_ref() {
            DeValue::Table(t) => table = t,
            _ => break,
        }
    }
    found.map(|s| line_of(text, s.start))
}

/// A mistake in a file (or the command line), located: what every reader of wirebench's
/// configuration files (scenarios, the x2x gateway's configuration) reports, printed as
/// `file:line: key: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileError {
    /// File name, or whatever the caller named the text (`command line`).
    pub origin: String,
    pub line: Option<usize>,
    /// Dotted key (`params.payload`), if the problem belongs to one.
    pub key: Option<String>,
    pub message: String,
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
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

impl std::error::Error for FileError {}

/// What is wrong, once located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The text is not TOML (the parser's own words).
    Syntax(String),
    /// `word` is not a key the table has; `valid` are the keys it has.
    UnknownKey { word: String, valid: Vec<String> },
    /// A required key is absent.
    Missing,
    /// Anything else, worded for users.
    Invalid(String),
}

/// A problem in a TOML text with its line and dotted key, when it has them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub line: Option<usize>,
    /// Dotted key (`link.dail`; `part.params.payload` inside any `[[part]]`).
    pub key: Option<String>,
    pub problem: Problem,
}

impl Located {
    /// The message, without file, line and key.
    pub fn message(&self) -> String {
        match &self.problem {
            Problem::Syntax(m) => format!("not valid TOML: {m}"),
            Problem::UnknownKey { word, valid } => {
                let hint = crate::hint::closest(word, valid.iter().map(String::as_str))
                    .map(|v| format!(" (did you mean `{v}`?)"))
                    .unwrap_or_default();
                format!("unknown key{hint}; valid keys: {}", valid.join(", "))
            }
            Problem::Missing => "missing (required)".to_string(),
            Problem::Invalid(m) => m.clone(),
        }
    }
}

/// Locates an error from `toml::from_str` (or any deserialization of `text` with the
/// `toml` crate) and rewords serde's standard messages.
pub fn toml_error(text: &str, err: &toml::de::Error) -> Located {
    let root = match DeTable::parse(text) {
        Ok(root) => root,
        Err(e) => {
            return Located {
                line: e.span().or(err.span()).map(|s| line_of(text, s.start)),
                key: None,
                problem: Problem::Syntax(one_line(e.message())),
            };
        }
    };
    // An empty span is the document's own (e.g. a key missing at the top level).
    let span = err.span().filter(|s| !s.is_empty());
    let mut path = Vec::new();
    if let Some(s) = &span {
        for (k, v) in root.get_ref() {
            path.push(k.get_ref().to_string());
            if within(v, s.start, &mut path) || k.span().contains(&s.start) {
                break;
            }
            path.pop();
        }
    }
    let line = span.as_ref().map(|s| line_of(text, s.start));
    let msg = err.message();
    let key = |path: &[String]| (!path.is_empty()).then(|| path.join("."));
    if let Some(field) = msg
        .strip_prefix("missing field `")
        .and_then(|m| m.strip_suffix('`'))
    {
        path.push(field.to_string());
        return Located {
            line,
            key: key(&path),
            problem: Problem::Missing,
        };
    }
    if let Some((word, rest)) = path.last().and_then(|word| {
        msg.strip_prefix(&format!("unknown field `{word}`, "))
            .map(|rest| (word.clone(), rest))
    }) {
        return Located {
            line,
            key: key(&path),
            problem: Problem::UnknownKey {
                word,
                valid: backticked(rest),
            },
        };
    }
    let problem = match ["invalid type: ", "invalid value: "]
        .iter()
        .find_map(|p| msg.strip_prefix(p))
        .and_then(|m| m.rsplit_once(", expected "))
    {
        Some((found, expected)) => Problem::Invalid(format!(
            "expected {}, found {}",
            expectation(expected),
            found_words(found)
        )),
        None => Problem::Invalid(one_line(msg)),
    };
    Located {
        line,
        key: key(&path),
        problem,
    }
}

/// Whether `pos` lies in `v`; if in one of its tables' keys or values, their names are
/// pushed onto `path` (array elements add no name: `part.name` for any `[[part]]`).
fn within(v: &Spanned<DeValue>, pos: usize, path: &mut Vec<String>) -> bool {
    match v.get_ref() {
        DeValue::Table(t) => {
            for (k, child) in t {
                path.push(k.get_ref().to_string());
                if within(child, pos, path) || k.span().contains(&pos) {
                    return true;
                }
                path.pop();
            }
        }
        DeValue::Array(a) if a.iter().any(|e| within(e, pos, path)) => return true,
        _ => {}
    }
    v.span().contains(&pos)
}

/// The names in backticks: serde's list of expected fields.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// serde's names of what a type expects, in the words of a TOML user.
fn expectation(expected: &str) -> &str {
    match expected {
        "a boolean" => "true or false",
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a whole number >= 0",
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number",
        "f32" | "f64" => "a number",
        "a sequence" => "a list",
        "a map" => "a table",
        s if s.starts_with("struct ") => "a table",
        s => s,
    }
}

fn found_words(found: &str) -> &str {
    match found {
        "sequence" => "a list",
        "map" => "a table",
        f => f,
    }
}

fn one_line(msg: &str) -> String {
    msg.trim()
        .lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct File {
        count: Option<u64>,
        link: Link,
        #[serde(default)]
        part: Vec<Part>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Link {
        peer: String,
        dial: Option<String>,
        tfo: Option<bool>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Part {
        name: String,
        params: Option<Inner>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        a: Option<u64>,
    }

    fn located(text: &str) -> (Option<usize>, Option<String>, String) {
        let e = toml::from_str::<File>(text).unwrap_err();
        let l = toml_error(text, &e);
        (l.line, l.key.clone(), l.message())
    }

    fn k(s: &str) -> Option<String> {
        Some(s.to_string())
    }

    #[test]
    fn unknown_keys_are_named_with_their_table_and_the_valid_ones() {
        let (line, key, msg) = located("count = 1\n\n[link]\npeer = \"p\"\ndail = \"both\"\n");
        assert_eq!((line, key), (Some(5), k("link.dail")));
        assert_eq!(
            msg,
            "unknown key (did you mean `dial`?); valid keys: peer, dial, tfo"
        );
        let (line, key, msg) =
            located("[link]\npeer = \"p\"\n[[part]]\nname = \"a\"\n[[part]]\nnme = \"b\"\n");
        assert_eq!((line, key), (Some(6), k("part.nme")));
        assert_eq!(
            msg,
            "unknown key (did you mean `name`?); valid keys: name, params"
        );
        let (line, key, _) =
            located("[link]\npeer = \"p\"\n[[part]]\nname = \"a\"\nparams = { b = 1 }\n");
        assert_eq!((line, key), (Some(5), k("part.params.b")));
        let (line, key, msg) = located("colour = 1\n");
        assert_eq!((line, key), (Some(1), k("colour")));
        assert!(
            msg.starts_with("unknown key; valid keys: count, link, part"),
            "{msg}"
        );
    }

    #[test]
    fn missing_keys_point_at_their_table() {
        let (line, key, msg) = located("count = 1\n\n[link]\ntfo = true\n");
        assert_eq!(
            (line, key, msg.as_str()),
            (Some(3), k("link.peer"), "missing (required)")
        );
        let (line, key, _) = located("[link]\npeer = \"p\"\n[[part]]\nname = \"a\"\n[[part]]\n");
        assert_eq!((line, key), (Some(5), k("part.name")));
        let (line, key, _) = located("count = 1\n");
        assert_eq!((line, key), (None, k("link")));
    }

    #[test]
    fn type_errors_say_what_was_expected_and_found() {
        let (line, key, msg) = located("[link]\npeer = \"p\"\n\ntfo = 1\n");
        assert_eq!((line, key), (Some(4), k("link.tfo")));
        assert_eq!(msg, "expected true or false, found integer `1`");
        let (_, key, msg) = located("count = -3\n[link]\npeer = \"p\"\n");
        assert_eq!(key, k("count"));
        assert_eq!(msg, "expected a whole number >= 0, found integer `-3`");
        let (_, key, msg) = located("link = 3\n");
        assert_eq!(key, k("link"));
        assert_eq!(msg, "expected a table, found integer `3`");
        let (_, key, msg) = located("[link]\npeer = [\"p\"]\n");
        assert_eq!(key, k("link.peer"));
        assert_eq!(msg, "expected a string, found a list");
    }

    #[test]
    fn syntax_errors_have_a_line_and_no_key() {
        let (line, key, msg) = located("count = 1\n[link\npeer = \"p\"\n");
        assert_eq!((line, key), (Some(2), None));
        assert!(msg.starts_with("not valid TOML: "), "{msg}");
        assert!(!msg.contains('\n'), "{msg}");
        let (line, _, msg) = located("count = 1\ncount = 2\n");
        assert_eq!(line, Some(2));
        assert!(msg.contains("duplicate key"), "{msg}");
    }

    #[test]
    fn keys_have_lines() {
        let text = "a = 1\n\n[limits]\nqueue = 2\n[[part]]\nname = \"x\"\n";
        assert_eq!(line_of_key(text, "a"), Some(1));
        assert_eq!(line_of_key(text, "limits.queue"), Some(4));
        assert_eq!(line_of_key(text, "limits.bytes"), Some(3));
        assert_eq!(line_of_key(text, "timing.ack"), None);
        assert_eq!(line_of_key("not [toml", "a"), None);
        assert_eq!(line_of("a\nb\n", 0), 1);
        assert_eq!(line_of("a\nb\n", 2), 2);
        assert_eq!(line_of("a\nb\n", 99), 3);
    }

    proptest! {
        /// Any text gives a located error or a value, never a panic; a line, when
        /// given, is within the text.
        #[test]
        fn any_text_is_located(text in "[a-z\\[\\]=\"{},.\\n 0-9-]{0,80}") {
            if let Err(e) = toml::from_str::<File>(&text) {
                let l = toml_error(&text, &e);
                if let Some(line) = l.line {
                    prop_assert!(line >= 1 && line <= text.lines().count().max(1) + 1);
                }
                let _ = l.message();
            }
        }
    }
}
