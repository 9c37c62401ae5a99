//! The shared half of wirebench's request/response and message protocols (`http`, `soap`,
//! `grpc`, `websocket`; `rmi` shares the result schema): each plugin supplies a client
//! ([`client::Connect`], [`client::Call`], optionally [`client::Streams`]) and a server
//! started per case with [`server::place`]; this crate runs the workloads over them
//! ([`workload::run`]): closed-loop ping-pong, open-loop ping-pong at a request rate
//! (`rate`, no coordinated omission), one-way and echo streams. Study S5 (Soap-Stone,
//! docs/protocols/soapstone.md) compares them with raw TCP.

pub mod client;
pub mod http;
pub mod params;
pub mod plugin;
pub mod server;
pub mod workload;

pub use client::{Call, Connect, Connected, Incoming, MsgRx, MsgTx, NoStreams, Opened, Streams};
pub use plugin::RpcProtocol;
pub use server::{Behaviour, Counters, Placed, Summary, place, place_on};
pub use workload::{Plan, What, run};
