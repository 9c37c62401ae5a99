//! Real XMPP servers as lab peers, started fresh for a case: Prosody 0.12 ([`prosody`])
//! and ejabberd 23.01 ([`ejabberd`]), what they share ([`config`]), which one a case runs
//! ([`peer`]), and the x2x gateway pair (XEP-0361, crate `wirebench-x2x-gateway`) that
//! links two of them in study S1's topology ([`x2x`]).
//!
//! Its one job is starting, watching and stopping those peers for a case. Concurrency:
//! blocking, on the caller's thread: each server is a child process in its own process
//! group, waited for until its ports listen and stopped by its PID; the x2x gateways run
//! their own blocking threads (`wirebench-x2x-gateway`), started inside the lab hosts.

pub mod config;
pub mod ejabberd;
pub mod peer;
pub mod prosody;
pub mod x2x;
