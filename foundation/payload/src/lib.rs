//! What every protocol sends and checks, protocol-free: the seeded payload [`Pattern`],
//! [`seeded`] bodies, and the [`tally`] of messages lost, duplicated, reordered or
//! corrupt by sequence number.

pub mod pattern;
pub mod seeded;
pub mod tally;

pub use pattern::Pattern;
pub use tally::{Counts, Tally};
