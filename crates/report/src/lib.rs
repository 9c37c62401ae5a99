//! Results files and renderings, all derived from [`Record`]s:
//! `results.jsonl` (the source of truth), `results.csv` (Soap-Stone-style pivot tables),
//! HdrHistogram interval logs, per-round series, and the terminal summary.

pub mod csv;
pub mod files;
pub mod summary;

pub use csv::{PivotOptions, pivot};
pub use files::{ResultsDir, atomic_write};
pub use summary::summary_table;
