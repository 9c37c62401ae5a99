//! The integration tests of this crate, one module per subject, in one test binary:
//! one link and one process for all of them (docs/testing.md).

mod browser;
mod browser_transports;
mod caps;
mod cli;
mod coap;
mod common;
mod conformance;
mod docs;
mod irc;
mod k8s;
mod k8s_pods;
mod lab;
mod load;
mod load_mqtt;
mod load_open_loop;
mod load_real;
mod load_target;
mod openings;
mod prereq;
mod proxies;
mod quic;
mod report;
mod s2_real;
mod shadowsocks;
mod shards;
mod soapstone;
mod tcp_cc;
mod x2x;
mod xmpp_bad_clients;
