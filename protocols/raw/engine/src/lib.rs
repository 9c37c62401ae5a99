//! Wire formats and state machines, sans-IO: no sockets, no clocks, no threads. Drivers in
//! `wirebench-raw-server` and the raw plugin feed bytes in and write bytes out.
//!
//! - [`raw`]: wirebench's own length-prefixed frames (documented in `docs/protocols/raw.md`).
//! - [`control`]: the JSON-lines control channel between `wirebench run` and `wirebench serve`.
//! - [`engine`]: the `raw` data connection's state machines (server echo/sink, client
//!   ping-pong and stream), driven by sockets or run over the link model in virtual time.
//!
//! The payload pattern and the message tally are protocol-free: `wirebench-payload`.

pub mod control;
pub mod engine;
pub mod raw;
