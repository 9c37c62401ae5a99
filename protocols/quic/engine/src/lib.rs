//! QUIC (RFC 9000, the transport; RFC 9001, its TLS 1.3 handshake; RFC 9002, loss
//! detection and congestion control) as a sans-IO engine on quinn-proto, the state
//! machine wirebench's engine shape was modelled on.
//!
//! - [`endpoint`]: an [`Endpoint`], quinn-proto's endpoint and connections as a
//!   [`wirebench_engine::DatagramEngine`]: datagrams in with their source and ECN, GSO
//!   batches out with their destination, one timer, events; the handshake's times
//!   (started, completed, confirmed: RFC 9001 §4.1) kept per connection.
//! - [`service`]: our server side, an echo, a sink and an HTTP/3 download service
//!   chosen by ALPN.
//! - [`h3`]: HTTP/3 (RFC 9114) and QPACK (RFC 9204) as far as `GET /N` needs, the
//!   language of real peers' example servers and clients.
//! - [`config`]: the transport knobs a case sets (congestion controller, initial RTT,
//!   datagram size, idle timeout), checked before use.
//! - [`tls`]: rustls with the ring provider, a self-signed certificate made per run.
//! - [`sim`]: a connection's first exchanges over the link model in virtual time, what
//!   the handshake costs on a slow link (its probe timeouts' bytes), for estimates.
//!
//! Nothing here reads a clock: an endpoint maps the driver's nanoseconds onto quinn's
//! `Instant`s from an epoch it is given, so the virtual-time harness
//! (`wirebench_engine::harness`) runs a client against the service exactly.
//! quinn's own randomness (connection IDs) is seeded; TLS's (key shares, nonces) is
//! not: it changes bytes, not sizes, but for the ECDSA signature, whose DER length
//! varies by a byte or two, which a rate-limited link turns into serialization time.
//! Tests that assert exact times use links without a rate.

pub mod config;
pub mod endpoint;
pub mod h3;
pub mod service;
pub mod sim;
pub mod tls;

pub use config::{Cc, ConfigError, INITIAL_RTT, MAX_DATAGRAM, MIN_DATAGRAM, Transport};
pub use endpoint::{ClientTls, Conn, Endpoint, EndpointError, Event, Handshake};
pub use h3::ALPN_H3;
pub use service::{Service, ServiceStats};
pub use tls::{ALPN_ECHO, ALPN_SINK, Identity, TlsError};

/// quinn-proto itself, for its connection, stream and stats types.
pub use quinn_proto as proto;
