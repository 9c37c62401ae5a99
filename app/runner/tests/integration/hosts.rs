//! The plugin interface's lab handle ([`wirebench_protocol::Hosts`]) over a real lab:
//! each of its ways into a host lands in that host.

use std::net::{IpAddr, TcpListener, TcpStream};
use wirebench_lab::Lab;
use wirebench_protocol::Hosts;
use wirebench_protocol::hosts::{CLIENT_ADDR, SERVER_ADDR, enter, run_in};

/// Each of the handle's ways into a host lands in that host: a command sees its
/// address, a thread that entered it can listen there, and a connection from the client
/// host crosses the link (counted) with the link's round trip. Needs root, like every
/// lab test (CI runs as root); it fails rather than passes without it.
#[test]
fn the_handle_reaches_the_right_hosts() {
    wirebench_lab::netns::check_privileges()
        .expect("this test builds a lab: run the suite as root (bash scripts/test.sh)");
    let spec = wirebench_link::LinkSpec::parse("10Mbit/5ms").unwrap();
    let lab = Lab::create(spec.to_params(), spec.to_params(), 1, None).unwrap();
    let hosts = Hosts::new(&lab);
    assert_ne!(hosts.client().name(), hosts.server().name());
    let addrs = hosts.server().run("ip", &["-4", "-o", "addr"]).unwrap();
    assert!(addrs.contains(&SERVER_ADDR.to_string()), "{addrs}");
    assert!(!addrs.contains(&CLIENT_ADDR.to_string()), "{addrs}");
    let by_name = run_in(hosts.client().name(), "ip", &["-4", "-o", "addr"]).unwrap();
    assert!(by_name.contains(&CLIENT_ADDR.to_string()), "{by_name}");

    let listener = std::thread::scope(|s| {
        s.spawn(|| {
            hosts.server().enter().unwrap();
            TcpListener::bind((SERVER_ADDR, 0)).unwrap()
        })
        .join()
        .unwrap()
    });
    let port = listener.local_addr().unwrap().port();
    let client = hosts.client().name().to_string();
    let before = hosts.counters();
    let local = std::thread::spawn(move || {
        enter(&client).unwrap();
        let s = TcpStream::connect((IpAddr::V4(SERVER_ADDR), port)).unwrap();
        s.local_addr().unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(local.ip(), IpAddr::V4(CLIENT_ADDR));
    let after = hosts.counters();
    assert!(after.up.delivered_packets > before.up.delivered_packets);
    assert!(!hosts.has_paths());
    assert_eq!(hosts.path_rtt_ns(local), Some(10_000_000));
    assert!(enter("wb-no-such-host").is_err());
}
