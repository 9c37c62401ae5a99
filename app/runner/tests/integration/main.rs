//! The integration tests of this crate, one module per subject, in one test binary:
//! one link and one process for all of them (docs/testing.md).

mod folders;
mod foundation_names;
mod hosts;
mod tiers;
