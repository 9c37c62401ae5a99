//! HTTP for the request/response protocols that ride on it (`http`, and `soap` with its
//! envelopes): HTTP/1.1 keep-alive (RFC 9112) and HTTP/2 with prior knowledge (RFC 9113),
//! the server on hyper, the client on httparse ([`h1`]) and h2. [`codec`] is how a
//! message sits in a request; [`client`] and [`server`] are written against it, so each
//! protocol brings only its codec.

pub mod client;
pub mod codec;
pub mod h1;
pub mod server;
