//! How long the framer ([`wirebench_xmpp::framer`]) takes to split a chat stanza off a
//! stream: the per-stanza cost every XMPP client driver and web gateway of the project
//! pays on top of its sockets. docs/performance.md quotes it.
//!
//!     cargo run --release -p wirebench-xmpp --example framer_rate [STANZAS]
//!
//! Prints three rounds of STANZAS (default 2,000,000) stanzas of 107 bytes, each pushed
//! and framed as one read would hand it over.

use wirebench_xmpp::framer::{Frame, Framer};

const HEADER: &str = "<stream:stream xmlns='jabber:client' \
    xmlns:stream='http://etherx.jabber.org/streams' id='abc' from='example.com' version='1.0'>";
const STANZA: &str = "<message to='user2@localhost/wb' from='user1@localhost/wb' type='chat' \
    id='m1234'><body>hi</body></message>";

fn main() {
    let n: u32 = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 2_000_000,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("framer_rate: STANZAS must be a positive number");
            std::process::exit(2);
        }
    };
    for round in 1..=3 {
        let mut f = Framer::new(65536);
        f.push(HEADER.as_bytes());
        while let Ok(Some(_)) = f.next_frame() {}
        let mut framed = 0usize;
        let t = std::time::Instant::now();
        for _ in 0..n {
            f.push(STANZA.as_bytes());
            while let Some(frame) = f.next_frame().expect("the stanza is well-formed") {
                if let Frame::Element(r) = frame {
                    framed += r.len();
                }
            }
        }
        let ns = t.elapsed().as_nanos() as f64 / f64::from(n);
        assert_eq!(framed, STANZA.len() * n as usize);
        println!("round {round}: {ns:.1} ns per {}-byte stanza", STANZA.len());
    }
}
