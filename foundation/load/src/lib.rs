//! Open-loop session load, independent of the protocol: Tsung-style arrival phases and the
//! schedule of intended starts they imply ([`phase`]), and the per-interval time series
//! whose histograms merge exactly across generator workers ([`series`]). A protocol plugin
//! that offers sessions drives them from these (issue #14; docs/load.md).

pub mod dist;
pub mod phase;
pub mod series;

pub use dist::Dist;
pub use phase::{Arrivals, Phase, PhaseError, Schedule, parse_phases};
pub use series::{
    Cause, Counts, Figures, Interval, IntervalsHeader, Latency, Recorder, Series, Wire,
};
