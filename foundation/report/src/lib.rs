//! Results files and renderings, all derived from [`Record`]s:
//! `results.jsonl` (the source of truth), `results.csv` (Soap-Stone-style pivot tables),
//! HdrHistogram interval logs, per-round series, the terminal summary, charts (SVG and
//! PNG) and the self-contained HTML report. Comparing two runs is wirebench-compare's.

pub mod charts;
pub mod csv;
pub mod files;
pub mod html;
pub mod info;
pub mod numbers;
pub mod spread;
pub mod summary;

pub use csv::{PivotOptions, pivot};
pub use files::{ResultsDir, atomic_write};
pub use html::{ReportError, write_report};
pub use info::{ChartSpec, Declared, ParamInfo, RunInfo};
pub use summary::summary_table;
