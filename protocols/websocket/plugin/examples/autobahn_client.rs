//! Drives the Autobahn testsuite's fuzzingserver with the `websocket` protocol's client
//! (`wirebench_plugin_websocket::autobahn`): every case the server's spec selected, then
//! its report. For `scripts/conformance/autobahn-client.sh`:
//!
//!     autobahn_client 127.0.0.1:9001 [AGENT]
//!
//! Prints one line per case, how the client saw its end (wstest's report judges it).
//! Exits 2 when the server could not be asked for its cases or its report.

use std::process::ExitCode;
use wirebench_plugin_websocket::autobahn::{Driver, Ended};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(addr) = args.next().and_then(|a| a.parse().ok()) else {
        eprintln!("usage: autobahn_client IP:PORT [AGENT]");
        return ExitCode::from(2);
    };
    let agent = args.next().unwrap_or_else(|| "wirebench".into());
    let driver = Driver::new(addr, &agent);
    let n = match driver.case_count().await {
        Ok(n) => n,
        Err(e) => {
            eprintln!("autobahn_client: /getCaseCount: {e}");
            return ExitCode::from(2);
        }
    };
    println!("autobahn_client: {n} cases, agent {agent}");
    for case in 1..=n {
        match driver.run_case(case).await {
            Ended::Closed { echoed } => {
                println!("case {case}: closed by the server, {echoed} echoed")
            }
            Ended::Failed(e) => println!("case {case}: failed by the client: {e}"),
            Ended::TimedOut => println!("case {case}: timed out, dropped"),
        }
    }
    if let Err(e) = driver.update_reports().await {
        eprintln!("autobahn_client: /updateReports: {e}");
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}
