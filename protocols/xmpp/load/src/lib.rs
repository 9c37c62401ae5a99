//! XMPP session load's generator (study S4, issue #14): many client sessions (RFC
//! 6120/6121 logins, rosters, presence and chat messages, STARTTLS per RFC 6120 section
//! 5) driven by mio event loops, one event loop per generator thread or process, each
//! owning its sessions' sockets; nothing here blocks on a session.
//!
//! - [`open_loop`]: one event loop running its share of an open-loop schedule of sessions
//!   through a script, recording latencies per interval.
//! - [`hold`]: many sessions logged in and held (the `hold_sessions` example, the
//!   cross-worker tests), with the address checks every load tool here applies.
//! - [`tls`]: the sessions' STARTTLS client configuration.
//!
//! The `load` workload that places a server and these generators for a case is the
//! plugin's (`wirebench-plugin-xmpp`, its `load_case`).

pub mod hold;
pub mod open_loop;
pub mod tls;
