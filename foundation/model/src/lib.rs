//! wirebench's vocabulary: human units, parameters and grids, the results schema and the
//! clock. No I/O lives here, so every layer above can depend on it.

pub mod clock;
pub mod hint;
pub mod located;
pub mod metric;
pub mod param;
pub mod results;
pub mod session_words;
pub mod shutdown;
pub mod units;

pub use metric::{Key, Merge, MetricSpec};
pub use param::{Axis, Grid, Kind, ParamValue, Point, Value};
pub use results::{HostFacts, Metric, Record, Status};
pub use shutdown::Shutdown;
pub use units::{Bytes, Rate, format_duration, format_seconds, parse_count, parse_duration};
