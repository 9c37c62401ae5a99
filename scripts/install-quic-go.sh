#!/usr/bin/env bash
# quic-go's example HTTP/3 server and client (Go module github.com/quic-go/quic-go), pinned,
# built from the Go module proxy into target/peers: the real QUIC peers beside ngtcp2's
# (Debian ngtcp2-server/ngtcp2-client). Both speak HTTP/3 only (ALPN h3). The server
# (bin/quic-go-server, from `example`) answers `GET /N` with N bytes and takes our
# certificate with -cert/-key; the client (bin/quic-go-client, from `example/client`)
# fetches URLs, -insecure skipping certificate verification. protocols/quic/plugin finds
# them in target/peers. The build is kept once per machine, in WIREBENCH_PEERS_CACHE
# (default ~/.cache/wirebench), and target/peers links to it. Needs Go 1.21 or later (the
# module asks for 1.26: an older go fetches that toolchain from the module proxy).
# Idempotent and quick when it is there.
#
#   bash scripts/install-quic-go.sh [--help]
set -euo pipefail
# shellcheck source=scripts/lib/cached-peer.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cached-peer.sh"
script_help "${BASH_SOURCE[0]}" "${1:-}"
cd "$(dirname "$0")/.."

VERSION=0.65.0
cached_peer quic-go-$VERSION

built() { [[ -x $1/bin/quic-go-server && -x $1/bin/quic-go-client ]]; }
if built "$LINK"; then
    exit 0
fi
if ! built "$ROOT"; then
    command -v go >/dev/null || {
        echo "install-quic-go.sh: needs Go 1.21 or later on PATH (Debian bookworm's golang-go is 1.19: too old)" >&2
        exit 1
    }
    echo "install-quic-go.sh: building quic-go $VERSION's example server and client into $ROOT (a minute or two, once per machine)" >&2
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/bin"
    # go install PKG@VERSION: the module's own go.mod and go.sum, no module of ours.
    GOTOOLCHAIN=auto GOBIN=$tmp/bin GOFLAGS=-buildvcs=false go install \
        "github.com/quic-go/quic-go/example@v$VERSION" \
        "github.com/quic-go/quic-go/example/client@v$VERSION"
    mkdir -p "$ROOT/bin"
    mv "$tmp/bin/example" "$ROOT/bin/quic-go-server"
    mv "$tmp/bin/client" "$ROOT/bin/quic-go-client"
fi
link_cached_peer
