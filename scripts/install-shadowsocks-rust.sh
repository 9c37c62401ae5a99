#!/usr/bin/env bash
# shadowsocks-rust (ssserver, sslocal), pinned, from crates.io into target/peers: the real
# Shadowsocks 2022 (SIP022) peer beside our server and client (Debian's shadowsocks-libev
# predates SIP022). Only what the tests use is built: server, local (SOCKS5 in) and the
# 2022 ciphers, no DNS-over-TLS, HTTP or tun. protocols/shadowsocks/plugin finds it in
# target/peers. The build is kept once per machine, in WIREBENCH_PEERS_CACHE (default
# ~/.cache/wirebench), and target/peers links to it, so a fresh clone (CI's) costs
# nothing; the first build takes several minutes. Idempotent and quick when it is there.
#
#   bash scripts/install-shadowsocks-rust.sh [--help]
set -euo pipefail
# shellcheck source=scripts/lib/cached-peer.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cached-peer.sh"
script_help "${BASH_SOURCE[0]}" "${1:-}"
cd "$(dirname "$0")/.."

VERSION=1.25.0
cached_peer shadowsocks-rust-$VERSION

built() { [[ -x $1/bin/ssserver && -x $1/bin/sslocal ]]; }
if built "$LINK"; then
    exit 0
fi
if ! built "$ROOT"; then
    echo "install-shadowsocks-rust.sh: building shadowsocks-rust $VERSION into $ROOT (several minutes, once per machine)" >&2
    cargo install --quiet --locked --root "$ROOT" shadowsocks-rust --version "$VERSION" \
        --no-default-features --features "server local aead-cipher aead-cipher-2022 multi-threaded"
fi
link_cached_peer
