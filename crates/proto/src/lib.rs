//! Wire formats and state machines, sans-IO: no sockets, no clocks, no threads. Drivers in
//! `wirebench-net` feed bytes in and write bytes out.
//!
//! - [`raw`]: wirebench's own length-prefixed frames (documented in `docs/protocols/raw.md`).
//! - [`control`]: the JSON-lines control channel between `wirebench run` and `wirebench serve`.
//! - [`tally`]: message accounting (lost / duplicated / corrupt) shared by every protocol.

pub mod control;
pub mod raw;
pub mod tally;
