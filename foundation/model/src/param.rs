//! Parameters, their typed values, and grids of them.
//!
//! A scenario is a list of parameters in a fixed order. Any parameter given more than one
//! value becomes an *axis*; cases are the cartesian product of the axes with the
//! right-most axis varying fastest (Soap-Stone's convention, which the CSV pivot relies on).

use crate::units::{Bytes, Rate, UnitError, format_duration, parse_count, parse_duration};
use std::fmt;
use std::time::Duration;

/// The type of a parameter, which decides how its text is parsed.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// One of a fixed set of words.
    Choice(&'static [&'static str]),
    Bytes,
    Duration,
    Count,
    Rate,
    /// Text checked by a function of a higher layer (e.g. a link spec); kept as a word.
    Custom {
        what: &'static str,
        check: fn(&str) -> Result<(), String>,
    },
}

/// A parsed parameter value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Word(String),
    Bytes(Bytes),
    Duration(Duration),
    Count(u64),
    Rate(Rate),
}

impl Value {
    /// Canonical JSON form used in results: bytes and counts as integers, durations as
    /// seconds, rates as bit/s, words as strings.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Word(w) => serde_json::Value::String(w.clone()),
            Value::Bytes(b) => b.0.into(),
            Value::Duration(d) => d.as_secs_f64().into(),
            Value::Count(c) => (*c).into(),
            Value::Rate(r) => r.0.into(),
        }
    }

    pub fn as_word(&self) -> Option<&str> {
        match self {
            Value::Word(w) => Some(w),
            _ => None,
        }
    }
    pub fn as_bytes(&self) -> Option<u64> {
        match self {
            Value::Bytes(b) => Some(b.0),
            _ => None,
        }
    }
    pub fn as_duration(&self) -> Option<Duration> {
        match self {
            Value::Duration(d) => Some(*d),
            _ => None,
        }
    }
    pub fn as_count(&self) -> Option<u64> {
        match self {
            Value::Count(c) => Some(*c),
            _ => None,
        }
    }
}

/// Why a parameter value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error(transparent)]
    Unit(#[from] UnitError),
    #[error("{input:?} is not one of: {}", choices.join(", "))]
    NotAChoice {
        input: String,
        choices: &'static [&'static str],
    },
    #[error("{input:?} is not a valid {what}: {reason}")]
    Custom {
        input: String,
        what: &'static str,
        reason: String,
    },
    /// Parsed, but outside what the parameter allows (`reason` says what is).
    #[error("{input:?} is not allowed: {reason}")]
    NotAllowed { input: String, reason: String },
}

impl Kind {
    pub fn parse(self, text: &str) -> Result<Value, ValueError> {
        let text = text.trim();
        Ok(match self {
            Kind::Choice(choices) => {
                if let Some(c) = choices.iter().find(|c| c.eq_ignore_ascii_case(text)) {
                    Value::Word(c.to_string())
                } else {
                    return Err(ValueError::NotAChoice {
                        input: text.to_string(),
                        choices,
                    });
                }
            }
            Kind::Bytes => Value::Bytes(Bytes::parse(text)?),
            Kind::Duration => Value::Duration(parse_duration(text)?),
            Kind::Count => Value::Count(parse_count(text)?),
            Kind::Rate => Value::Rate(Rate::parse(text)?),
            Kind::Custom { what, check } => {
                check(text).map_err(|reason| ValueError::Custom {
                    input: text.to_string(),
                    what,
                    reason,
                })?;
                Value::Word(text.to_string())
            }
        })
    }
}

/// A value together with the label the user typed (kept for tables and legends).
#[derive(Debug, Clone, PartialEq)]
pub struct ParamValue {
    pub label: String,
    pub value: Value,
}

impl ParamValue {
    pub fn parse(kind: Kind, text: &str) -> Result<ParamValue, ValueError> {
        Ok(ParamValue {
            label: text.trim().to_string(),
            value: kind.parse(text)?,
        })
    }
    /// A value built in code (a default), labelled the way a user would type it.
    pub fn from_value(value: Value) -> ParamValue {
        let label = match &value {
            Value::Word(w) => w.clone(),
            Value::Bytes(b) => b.0.to_string(),
            Value::Duration(d) => format_duration(*d),
            Value::Count(c) => c.to_string(),
            Value::Rate(r) => r.to_string(),
        };
        ParamValue { label, value }
    }
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

/// One parameter with all the values it takes in a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub name: String,
    pub values: Vec<ParamValue>,
}

/// Ordered parameters; the order decides which axis varies fastest.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grid {
    pub axes: Vec<Axis>,
}

/// A point of the grid: one value per parameter, in grid order.
pub type Point = Vec<(String, ParamValue)>;

impl Grid {
    pub fn get(&self, name: &str) -> Option<&Axis> {
        self.axes.iter().find(|a| a.name == name)
    }

    /// Sets a parameter's values. An existing parameter keeps its position (so overriding
    /// a scenario value from the command line does not reorder the tables); a new one is
    /// appended.
    pub fn set(&mut self, name: &str, values: Vec<ParamValue>) {
        if let Some(a) = self.axes.iter_mut().find(|a| a.name == name) {
            a.values = values;
        } else {
            self.axes.push(Axis {
                name: name.to_string(),
                values,
            });
        }
    }

    /// Names of the parameters that take more than one value.
    pub fn varying(&self) -> Vec<&str> {
        self.axes
            .iter()
            .filter(|a| a.values.len() > 1)
            .map(|a| a.name.as_str())
            .collect()
    }

    /// The cartesian product, right-most axis fastest. An axis with no values yields no
    /// points at all (a product with an empty set is empty).
    pub fn expand(&self) -> Vec<Point> {
        let mut points: Vec<Point> = vec![Vec::new()];
        for axis in &self.axes {
            let mut next = Vec::with_capacity(points.len() * axis.values.len());
            for p in &points {
                for v in &axis.values {
                    let mut q = p.clone();
                    q.push((axis.name.clone(), v.clone()));
                    next.push(q);
                }
            }
            points = next;
        }
        points
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn axis(name: &str, kind: Kind, vals: &[&str]) -> Axis {
        Axis {
            name: name.into(),
            values: vals
                .iter()
                .map(|v| ParamValue::parse(kind, v).unwrap())
                .collect(),
        }
    }

    #[test]
    fn expansion_order_is_right_most_fastest() {
        let g = Grid {
            axes: vec![
                axis(
                    "mode",
                    Kind::Choice(&["oneway", "echo"]),
                    &["oneway", "echo"],
                ),
                axis("payload", Kind::Bytes, &["2", "100", "1KiB"]),
            ],
        };
        let labels: Vec<String> = g
            .expand()
            .iter()
            .map(|p| {
                p.iter()
                    .map(|(_, v)| v.label.clone())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .collect();
        assert_eq!(
            labels,
            [
                "oneway/2",
                "oneway/100",
                "oneway/1KiB",
                "echo/2",
                "echo/100",
                "echo/1KiB"
            ]
        );
        assert_eq!(g.varying(), ["mode", "payload"]);
    }

    #[test]
    fn set_keeps_position() {
        let mut g = Grid {
            axes: vec![
                axis("a", Kind::Count, &["1"]),
                axis("b", Kind::Count, &["2"]),
            ],
        };
        g.set("a", vec![ParamValue::parse(Kind::Count, "5").unwrap()]);
        g.set("c", vec![ParamValue::parse(Kind::Count, "7").unwrap()]);
        let names: Vec<_> = g.axes.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(g.axes[0].values[0].label, "5");
    }

    #[test]
    fn choices_are_case_insensitive_and_listed_on_error() {
        let k = Kind::Choice(&["pingpong", "stream"]);
        assert_eq!(k.parse("PingPong").unwrap(), Value::Word("pingpong".into()));
        let e = k.parse("flood").unwrap_err().to_string();
        assert!(e.contains("pingpong, stream"), "{e}");
    }

    proptest! {
        #[test]
        fn product_size_and_uniqueness(sizes in proptest::collection::vec(1usize..4, 0..5)) {
            let axes: Vec<Axis> = sizes.iter().enumerate().map(|(i, n)| Axis {
                name: format!("p{i}"),
                values: (0..*n).map(|v| ParamValue::from_value(Value::Count(v as u64))).collect(),
            }).collect();
            let g = Grid { axes };
            let pts = g.expand();
            prop_assert_eq!(pts.len(), sizes.iter().product::<usize>());
            let mut labels: Vec<String> = pts.iter()
                .map(|p| p.iter().map(|(_, v)| v.label.clone()).collect::<Vec<_>>().join(","))
                .collect();
            let before = labels.len();
            labels.sort();
            labels.dedup();
            prop_assert_eq!(labels.len(), before);
        }

        #[test]
        fn bytes_never_panic(s in "\\PC{0,12}") {
            let _ = Kind::Bytes.parse(&s);
            let _ = Kind::Duration.parse(&s);
            let _ = Kind::Count.parse(&s);
            let _ = Kind::Rate.parse(&s);
        }
    }
}
