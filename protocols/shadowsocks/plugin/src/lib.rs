//! `shadowsocks`: the connect workload through a Shadowsocks AEAD server (SIP004/SIP007,
//! docs/protocols/proxies.md), study S3's encrypted proxy. The server, ours
//! ([`server`]) or shadowsocks-libev's `ss-server` ([`peers`]), is started per case beside
//! the origin, in the lab's server host. Shadowsocks has no handshake: the client's first
//! write is its salt, the origin's address and its message, sealed ([`stream`]), which
//! with `tfo=on` is the SYN's data:
//!
//! - `tfo=off`: two round trips to the first byte, as direct TCP;
//! - `tfo=on`: one, as direct TCP with Fast Open (the server then needs Fast Open too:
//!   ours always offers it, ss-server gets `--fast-open`).
//!
//! The codec is `wirebench-shadowsocks` (protocols/shadowsocks/engine).

mod dial;
pub mod peers;
pub mod server;
pub mod stream;

pub use dial::{Shadowsocks, ShadowsocksDial};

use wirebench_model::Kind;
use wirebench_protocol::params::ParamSpec;
use wirebench_shadowsocks::{Cipher, Key};

pub const SERVER: ParamSpec = ParamSpec {
    name: "shadowsocks.server",
    kind: Kind::Choice(&["ours", "libev"]),
    default: "ours",
    workloads: &["connect"],
    help: "the Shadowsocks server: ours (wirebench's, allow-listed to the origin) or libev (Debian's shadowsocks-libev ss-server, started per case, its ACL blocking all but the origin)",
    words: "Shadowsocks server",
};

pub const CIPHER: ParamSpec = ParamSpec {
    name: "shadowsocks.cipher",
    kind: Kind::Choice(&["chacha20-ietf-poly1305", "aes-256-gcm", "aes-128-gcm"]),
    default: "chacha20-ietf-poly1305",
    workloads: &["connect"],
    help: "the AEAD cipher (SIP004) of client and server",
    words: "Shadowsocks cipher",
};

/// The password of `wirebench serve --also shadowsocks=ADDR` unless
/// `WIREBENCH_SHADOWSOCKS_PASSWORD` names another; cases draw one of their own.
pub const DEFAULT_PASSWORD: &str = "wirebench";

/// One key per cipher for `password`: a server that takes clients of any cipher.
pub fn every_cipher(password: &[u8]) -> Vec<Key> {
    Cipher::ALL
        .iter()
        .map(|c| Key::from_password(*c, password))
        .collect()
}
