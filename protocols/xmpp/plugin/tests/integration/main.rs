//! The integration tests of this crate, one module per subject, in one test binary:
//! one link and one process for all of them (docs/testing.md).

mod prosody_tls;
mod s1_servers;
