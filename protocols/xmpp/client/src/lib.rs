//! The native XMPP client driver, its one job: the sans-IO client engine of
//! `wirebench-xmpp` (RFC 6120/6121, SASL SCRAM per RFC 5802/7677, STARTTLS) logged in and
//! driven over what carries its stream, TCP (RFC 6120), WebSocket (RFC 7395), BOSH
//! (XEP-0124/0206) or SockJS 0.3.3.
//!
//! Concurrency: blocking, on the caller's thread; it starts none of its own. One
//! [`session::XmppSession`] is one connection run by the one blocking driver
//! (`wirebench_engine::blocking`: read timeouts of at most 100 ms, the engine's timer
//! served between reads, every event stamped with the time its bytes were read); the
//! polling transports (BOSH, SockJS's HTTP ones) keep up to two HTTP/1.1 connections,
//! waited on together with one `poll(2)`.
//!
//! - [`session`]: the engine on the blocking driver: log in, send, wait for events.
//! - [`transport`]: the transports, each a blocking [`transport::Conn`] that turns the
//!   engine's RFC 6120 byte stream into the transport's messages with the sans-IO
//!   engines of `wirebench-xmpp-web`.

pub mod session;
pub mod transport;
