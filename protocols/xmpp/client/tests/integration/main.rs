//! The integration tests of this crate, one module per subject, in one test binary
//! (docs/testing.md): the client against misbehaving servers, the built-in server, and
//! the built-in server behind the web gateways.

mod builtin_server;
mod session;
mod web_endpoints;
