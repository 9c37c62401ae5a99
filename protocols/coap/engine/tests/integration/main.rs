//! The integration tests of this crate, one module per subject, in one test binary
//! (docs/testing.md): the client and server endpoints wired through [`pipe`], an
//! in-memory datagram link with delay, rate and loss in virtual time.

mod blockwise;
mod pipe;
mod properties;
mod retransmission;
