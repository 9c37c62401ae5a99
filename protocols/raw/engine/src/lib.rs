//! Wire formats and state machines, sans-IO: no sockets, no clocks, no threads. Drivers in
//! `wirebench-net` feed bytes in and write bytes out.
//!
//! - [`raw`]: wirebench's own length-prefixed frames (documented in `docs/protocols/raw.md`).
//! - [`control`]: the JSON-lines control channel between `wirebench run` and `wirebench serve`.
//! - [`tally`]: message accounting (lost / duplicated / corrupt) shared by every protocol.
//! - [`engine`]: the `raw` data connection's state machines (server echo/sink, client
//!   ping-pong and stream), driven by sockets or run over the link model in virtual time.

pub mod control;
pub mod engine;
pub mod raw;
pub mod tally;
