//! The metrics of the connect workload, declared with the shared ones in
//! [`wirebench_model::metric::connect`] (the report reads S3's); the runner joins them
//! with the shared and the plugins' own.

pub use wirebench_model::metric::connect::*;
