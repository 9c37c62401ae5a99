//! `shadowsocks`: the connect workload through a Shadowsocks AEAD server (SIP004/SIP007)
//! or a Shadowsocks 2022 one (SIP022, `shadowsocks.cipher=2022-blake3-*`;
//! docs/protocols/proxies.md), study S3's encrypted proxy. The server, ours
//! ([`server`]), shadowsocks-libev's `ss-server` or shadowsocks-rust's `ssserver`
//! ([`peers`]), is started per case beside the origin, in the lab's server host. Shadowsocks has no handshake: the client's first
//! write is its salt, the origin's address and its message, sealed ([`stream`]), which
//! with `tfo=on` is the SYN's data:
//!
//! - `tfo=off`: two round trips to the first byte, as direct TCP;
//! - `tfo=on`: one, as direct TCP with Fast Open (the server then needs Fast Open too:
//!   ours always offers it, ss-server gets `--fast-open`).
//!
//! The codec is `wirebench-shadowsocks` (protocols/shadowsocks/engine).

mod method;
pub mod peers;
mod plugin;
pub mod server;
pub mod stream;

pub use plugin::{SHADOWSOCKS, ShadowsocksDial};

/// The plugin, for the runner's registry.
pub static PLUGIN: &dyn wirebench_protocol::Protocol = &SHADOWSOCKS;
pub use method::{Method, Secret};

use wirebench_model::Kind;
use wirebench_protocol::params::ParamSpec;
use wirebench_shadowsocks::{Cipher, Key};

pub const SERVER: ParamSpec = ParamSpec {
    name: "shadowsocks.server",
    kind: Kind::Choice(&["ours", "libev", "rust"]),
    default: "ours",
    workloads: &["connect"],
    help: "the Shadowsocks server: ours (wirebench's, allow-listed to the origin), libev (Debian's shadowsocks-libev ss-server) or rust (shadowsocks-rust's ssserver, scripts/install-shadowsocks-rust.sh; the only peer with the 2022 methods), each started per case with an ACL blocking all but the origin",
    words: "Shadowsocks server",
};

pub const CIPHER: ParamSpec = ParamSpec {
    name: "shadowsocks.cipher",
    kind: Kind::Choice(&[
        "chacha20-ietf-poly1305",
        "aes-256-gcm",
        "aes-128-gcm",
        "2022-blake3-aes-256-gcm",
        "2022-blake3-aes-128-gcm",
        "2022-blake3-chacha20-poly1305",
    ]),
    default: "chacha20-ietf-poly1305",
    workloads: &["connect"],
    help: "the method of client and server: an AEAD cipher (SIP004/SIP007, a password) or a Shadowsocks 2022 one (SIP022, 2022-blake3-*, a base64 key; not in shadowsocks-libev)",
    words: "Shadowsocks cipher",
};

/// The password of `wirebench serve --also shadowsocks=ADDR` unless
/// `WIREBENCH_SHADOWSOCKS_PASSWORD` names another; cases draw one of their own.
pub const DEFAULT_PASSWORD: &str = "wirebench";

/// Now as Unix seconds, for SIP022's timestamps (0 if the clock is before 1970, which
/// every peer then refuses).
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// One key per cipher for `password`: a server that takes clients of any cipher.
pub fn every_cipher(password: &[u8]) -> Vec<Key> {
    Cipher::ALL
        .iter()
        .map(|c| Key::from_password(*c, password))
        .collect()
}
