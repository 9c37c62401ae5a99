//! `wirebench serve --quic ADDR`: our QUIC server alone on a UDP address, for third-party
//! clients (quic-go's and ngtcp2's example clients, a browser forced onto QUIC): the
//! builtin service of the cases ([`crate::server`]), HTTP/3 `GET /N` (ALPN h3) beside our
//! echo and sink ALPNs, with a self-signed certificate for `quic.wirebench.test` made at
//! start (clients skip its verification, or trust the file `--quic-cert` writes), taking
//! 0-RTT data on resumed sessions.
//! Stopped with the process (Ctrl-C or SIGTERM), saying what it served.

use anyhow::{Context, Result, bail};
use clap::{Args, FromArgMatches};
use std::net::SocketAddr;
use std::path::PathBuf;
use wirebench_model::Shutdown;
use wirebench_protocol::{ServePlan, Serving};
use wirebench_quic_engine::{Identity, Transport};

#[derive(Args)]
pub struct ServeFlags {
    /// Also serve QUIC (RFC 9000) on this UDP address, e.g. 127.0.0.1:4433: HTTP/3 `GET /N`
    /// answered with N bytes (ALPN h3), and our echo and sink ALPNs; a self-signed
    /// certificate for quic.wirebench.test.
    #[arg(long, value_name = "ADDR")]
    pub quic: Option<String>,
    /// Write the QUIC server's certificate (PEM) to this file, for clients that verify it.
    #[arg(long, value_name = "FILE", requires = "quic")]
    pub quic_cert: Option<PathBuf>,
    /// Validate each client's address with a Retry packet before its handshake (RFC 9000
    /// §8.1.2): one round trip more, the interop runner's retry case.
    #[arg(long, requires = "quic")]
    pub quic_retry: bool,
}

/// Adds the QUIC flags to `wirebench serve`, under their own heading.
pub fn serve_flags(serve: clap::Command) -> clap::Command {
    ServeFlags::augment_args(serve.next_help_heading("QUIC (our server, HTTP/3 GET /N)"))
}

/// What the QUIC flags asked for, checked; `None` when none was given.
pub fn serve_plan(m: &clap::ArgMatches, _quiet: bool) -> Result<Option<Box<dyn ServePlan>>> {
    let flags = ServeFlags::from_arg_matches(m)?;
    let Some(addr) = &flags.quic else {
        return Ok(None);
    };
    let at: SocketAddr = addr
        .trim()
        .parse()
        .map_err(|_| anyhow::anyhow!("--quic {addr}: expected IP:PORT, e.g. 127.0.0.1:4433"))?;
    Ok(Some(Box::new(Plan {
        at,
        cert: flags.quic_cert,
        retry: flags.quic_retry,
    })))
}

struct Plan {
    at: SocketAddr,
    cert: Option<PathBuf>,
    retry: bool,
}

struct Running {
    server: crate::server::Server,
}

impl ServePlan for Plan {
    fn start(self: Box<Self>, _shutdown: &Shutdown) -> Result<Box<dyn Serving>> {
        let identity = Identity::generate(crate::SERVER_NAME).context("QUIC certificate")?;
        if let Some(path) = &self.cert {
            std::fs::write(path, &identity.cert_pem)
                .with_context(|| format!("--quic-cert {}", path.display()))?;
        }
        // 0-RTT on: a client resuming a session may send its request with its first
        // Initial (RFC 9001 §4.6; the interop runner's zerortt). What this server
        // answers has no effect a replay could repeat (RFC 9001 §9.2).
        let transport = Transport {
            zero_rtt: true,
            retry: self.retry,
            ..Transport::default()
        };
        let server = crate::server::start(None, self.at, &identity, &transport, 0)
            .map_err(|e| anyhow::anyhow!("--quic {}: {e}", self.at))?;
        eprintln!(
            "wirebench serve: QUIC on udp {}: HTTP/3 GET /N (ALPN h3), wirebench-echo, wirebench-sink, 0-RTT accepted on resumed sessions{}; certificate for {}{}",
            server.addr,
            if self.retry {
                ", every client's address validated with a Retry first"
            } else {
                ""
            },
            crate::SERVER_NAME,
            self.cert
                .as_ref()
                .map_or(String::new(), |p| format!(" in {}", p.display()))
        );
        Ok(Box::new(Running { server }))
    }
}

impl Serving for Running {
    fn stop(self: Box<Self>) -> Result<()> {
        let Some(s) = self.server.finish() else {
            bail!("the QUIC server's thread panicked");
        };
        eprintln!(
            "wirebench serve: QUIC totals: {} connection(s) ({} with 0-RTT data), {} Retry packet(s) sent, {} HTTP/3 request(s) answered, {} refused, {} B out, {} failed",
            s.connections, s.zero_rtt, s.retries, s.requests, s.bad_requests, s.bytes_out, s.failed
        );
        Ok(())
    }
}
