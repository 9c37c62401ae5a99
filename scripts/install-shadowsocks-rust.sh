#!/usr/bin/env bash
# shadowsocks-rust (ssserver, sslocal), pinned, from crates.io into target/peers: the real
# Shadowsocks 2022 (SIP022) peer beside our server and client (Debian's shadowsocks-libev
# predates SIP022). Only what the tests use is built: server, local (SOCKS5 in) and the
# 2022 ciphers, no DNS-over-TLS, HTTP or tun. Idempotent and quick when it is there; the
# first build takes several minutes. protocols/shadowsocks/plugin finds it there.
#
#   bash scripts/install-shadowsocks-rust.sh [--help]
set -euo pipefail
case ${1:-} in
-h | --help)
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
esac
cd "$(dirname "$0")/.."

VERSION=1.25.0
ROOT=target/peers/shadowsocks-rust-$VERSION

if [[ -x $ROOT/bin/ssserver && -x $ROOT/bin/sslocal ]]; then
    exit 0
fi
echo "install-shadowsocks-rust.sh: building shadowsocks-rust $VERSION into $ROOT (several minutes)" >&2
cargo install --quiet --locked --root "$ROOT" shadowsocks-rust --version "$VERSION" \
    --no-default-features --features "server local aead-cipher aead-cipher-2022 multi-threaded"
