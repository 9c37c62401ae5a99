//! The client endpoint over a real UDP socket, to check it against a real peer:
//!
//! ```text
//! cargo run --release -p wirebench-coap-engine --example udp_client -- \
//!     127.0.0.1:5683 get|put|non PATH [BLOCK_SIZE [BYTES]]
//! ```
//!
//! `put` sends BYTES (default 3000) bytes in Block1 blocks of BLOCK_SIZE; `get` asks for
//! Block2 blocks of BLOCK_SIZE; `non` is a Non-confirmable GET. Prints the response code,
//! the body's length and the client's counts.
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use wirebench_coap_engine::{Client, ClientConfig, Code, Event, Request, Szx};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [server, verb, path, rest @ ..] = args.as_slice() else {
        return Err("usage: udp_client ADDR get|put|non PATH [BLOCK_SIZE [BYTES]]".into());
    };
    let server: SocketAddr = server.parse()?;
    let block = rest
        .first()
        .map(|s| s.parse())
        .transpose()?
        .map(Szx::at_most);
    let bytes: usize = rest.get(1).map_or(Ok(3000), |s| s.parse())?;
    let mut request = Request::get(server, path, verb != "non");
    request.block_size = block;
    if verb == "put" {
        request.method = Code::PUT;
        request.payload = (0..bytes).map(|i| b'a' + (i % 26) as u8).collect();
    }
    let socket = UdpSocket::bind("0.0.0.0:0")?;
    let start = Instant::now();
    let now = || start.elapsed().as_nanos() as u64;
    let mut client = Client::new(ClientConfig::default(), now())?;
    client.request(request)?;
    let mut buf = vec![0u8; 65_536];
    loop {
        while let Some(t) = client.poll_transmit(now()) {
            socket.send_to(&t.datagram, t.destination)?;
        }
        if let Some(event) = client.poll_event() {
            match event {
                Event::Response(r) => println!(
                    "{} {} bytes in {} exchanges, {:.3} s",
                    r.code,
                    r.payload.len(),
                    r.exchanges,
                    r.elapsed_ns as f64 / 1e9
                ),
                Event::Failed { failure, .. } => println!("failed: {failure:?}"),
            }
            println!("{:?}", client.stats());
            return Ok(());
        }
        let wait = client
            .poll_timeout()
            .map_or(1_000_000_000, |t| t.saturating_sub(now()));
        socket.set_read_timeout(Some(Duration::from_nanos(wait.max(1_000_000))))?;
        match socket.recv_from(&mut buf) {
            Ok((n, from)) => {
                if let Err(e) = client.handle_datagram(now(), from, &buf[..n]) {
                    eprintln!("dropped a datagram: {e}");
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e.into()),
        }
        if client.poll_timeout().is_some_and(|t| t <= now()) {
            client.handle_timeout(now());
        }
    }
}
