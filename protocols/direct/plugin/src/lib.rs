//! `direct`: the proxies' baseline, study S3's connect workload straight to its origin.
//! It lives with that workload (`workloads/connect`), which every proxy's plugin shares;
//! this folder only registers it as a protocol of its own.

/// The plugin, for the runner's registry.
pub static PLUGIN: &dyn wirebench_protocol::Protocol = &wirebench_connect::DirectProtocol;
