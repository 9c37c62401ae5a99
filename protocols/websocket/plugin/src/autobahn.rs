//! The client side of the Autobahn testsuite's fuzzingserver (`wstest -m fuzzingserver`,
//! RFC 6455 from the client's seat; issue #32, docs/conformance.md): the `websocket`
//! protocol's own [`Client`] (its TCP connect, upgrade, frame and message limits and
//! receive path, the code the benchmarks run) asks `/getCaseCount`, connects to
//! `/runCase?case=N&agent=A` for each case and echoes every text and binary message
//! until the server closes, then asks `/updateReports?agent=A` so that wstest writes its
//! report. The suite judges each case; this only drives it. Run by
//! `scripts/conformance/autobahn-client.sh` through `examples/autobahn_client.rs`.

use super::{Client, Data, next_data, ws_error};
use futures_util::{SinkExt, StreamExt};
use std::net::SocketAddr;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;
use wirebench_protocol::WorkloadError;

/// The largest message a case sends: 9.1.6 and 9.2.6 send 16 MiB, as large as
/// `wirebench serve`'s default `--max-payload`, the limit its own server applies.
pub const MAX_MESSAGE: usize = 16 << 20;

/// How one case's connection ended, as the client saw it.
#[derive(Debug)]
pub enum Ended {
    /// The server closed; `echoed` data messages went back before it did.
    Closed { echoed: u64 },
    /// The client failed the connection (RFC 6455 §7.1.7): what it took for a violation.
    Failed(WorkloadError),
    /// Nothing happened for the case's time limit; the connection was dropped.
    TimedOut,
}

/// A client of the fuzzingserver at `addr` (its WebSocket port), reporting as `agent`.
pub struct Driver {
    client: Client,
    agent: String,
    /// Longest a case may take, so a case the client mishandles cannot stall the run.
    pub case_limit: Duration,
}

impl Driver {
    pub fn new(addr: SocketAddr, agent: &str) -> Driver {
        Driver {
            client: Client {
                addr,
                max_payload: MAX_MESSAGE,
                nodelay: true,
            },
            agent: agent.to_string(),
            case_limit: Duration::from_secs(60),
        }
    }

    /// The number of cases the server's spec selected (`/getCaseCount`, one text message).
    pub async fn case_count(&self) -> Result<u32, WorkloadError> {
        let (mut ws, _, _) = self.client.open_ws("/getCaseCount").await?;
        let n = match next_data(&mut ws).await? {
            Some(Data::Text(t)) => t.as_str().trim().parse().ok(),
            _ => None,
        };
        let _ = ws.close(None).await;
        n.ok_or_else(|| WorkloadError::Peer("/getCaseCount sent no number".into()))
    }

    /// Runs case `n` (1-based): echoes until the server closes or the limit passes.
    pub async fn run_case(&self, n: u32) -> Ended {
        let path = format!("/runCase?case={n}&agent={}", self.agent);
        match tokio::time::timeout(self.case_limit, self.echo(&path)).await {
            Ok(Ok(echoed)) => Ended::Closed { echoed },
            Ok(Err(e)) => Ended::Failed(e),
            Err(_) => Ended::TimedOut,
        }
    }

    /// Asks the server to write its reports for this agent (`/updateReports`).
    pub async fn update_reports(&self) -> Result<(), WorkloadError> {
        let path = format!("/updateReports?agent={}", self.agent);
        self.echo(&path).await.map(|_| ())
    }

    /// Opens `path` and sends back every data message as it came (text as text, binary as
    /// binary) until the server's Close, which tungstenite answers; returns the count.
    async fn echo(&self, path: &str) -> Result<u64, WorkloadError> {
        let (mut ws, _, _) = self.client.open_ws(path).await?;
        let mut echoed = 0;
        while let Some(m) = next_data(&mut ws).await? {
            let m = match m {
                Data::Binary(b) => Message::Binary(b),
                Data::Text(t) => Message::Text(t),
            };
            ws.send(m).await.map_err(|e| ws_error(e, "sending"))?;
            echoed += 1;
        }
        // tungstenite has queued its answer to the server's Close (RFC 6455 §5.5.1); it
        // goes out when the connection is next read or flushed. Reading on until the
        // server ends the TCP connection, as a server should (§7.1.1), sends it.
        // (`WebSocketStream::close` would not: it sends a Close of its own, refused once
        // the server's has come.)
        while ws.next().await.is_some() {}
        Ok(echoed)
    }
}
