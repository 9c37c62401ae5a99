//! XMPP session load (study S4, issue #14): many client sessions driven by mio event
//! loops, one per generator thread or process, against the built-in server, a Prosody or
//! ejabberd started for the case, or a server at an address.
//!
//! - [`open_loop`]: one event loop running its share of an open-loop schedule of sessions
//!   through a script, recording latencies per interval.
//! - [`load_case`]: the `load` workload of `--protocol xmpp`: the server, the generator
//!   threads or processes, and the case's metrics and time series.
//! - [`hold`]: many sessions logged in and held (the `hold_sessions` example, the
//!   cross-worker tests), with the address checks every load tool here applies.
//! - [`tls`]: the sessions' STARTTLS client configuration.
//! - `room`: whether the machine can hold the case's peak of sessions (memory, open
//!   files, tracked connections), what it needs per session, and how many sessions one
//!   process holds.
//! - `usage`: what the case's processes use, sampled beside it, and each side's CPU per
//!   login.

pub mod hold;
pub mod load_case;
pub mod metrics;
pub mod open_loop;
mod room;
pub mod tls;
mod usage;
