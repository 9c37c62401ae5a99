//! Third-party servers as lab peers: configuration generated from the facts in
//! `../shared/PEERS.md`, start inside a lab host, readiness, stop.

pub mod ngircd;
pub mod prosody;

#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("{program} is not installed; install it with: {install}")]
    Missing { program: String, install: String },
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("{what}\n{detail}")]
    Failed { what: String, detail: String },
}
