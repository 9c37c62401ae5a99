#!/usr/bin/env bash
# mochi-mqtt (Go module github.com/mochi-mqtt/server/v2), pinned, as an MQTT 3.1.1 and 5.0
# broker for `mqtt.broker=mochi`: the module is a library, so this script writes a
# minimal program of wirebench's own around it (one TCP listener at -addr, every client
# allowed, errors only in its log) and builds it from the Go module proxy into
# target/peers/mochi-mqtt-VERSION/bin/mochi-mqtt. The build is kept once per machine in
# WIREBENCH_PEERS_CACHE (default ~/.cache/wirebench). Needs Go 1.21 or later. Idempotent
# and quick when it is there.
#
#   bash scripts/install-mochi.sh [--help]
set -euo pipefail
# shellcheck source=scripts/lib/cached-peer.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cached-peer.sh"
script_help "${BASH_SOURCE[0]}" "${1:-}"
cd "$(dirname "$0")/.."

VERSION=2.7.9
cached_peer mochi-mqtt-$VERSION

built() { [[ -x $1/bin/mochi-mqtt ]]; }
if built "$LINK"; then
    exit 0
fi
if ! built "$ROOT"; then
    command -v go >/dev/null || {
        echo "install-mochi.sh: needs Go 1.21 or later on PATH" >&2
        exit 1
    }
    echo "install-mochi.sh: building mochi-mqtt $VERSION into $ROOT (a minute, once per machine)" >&2
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    cat >"$tmp/main.go" <<'GO'
// The broker wirebench starts for mqtt.broker=mochi: mochi-mqtt's server with one TCP
// listener, anonymous clients allowed, logging errors only, stopped by SIGTERM.
package main

import (
	"flag"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:1883", "address of the TCP listener")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	server := mqtt.New(&mqtt.Options{Logger: logger})
	if err := server.AddHook(new(auth.AllowHook), nil); err != nil {
		log.Fatal(err)
	}
	if err := server.AddListener(listeners.NewTCP(listeners.Config{ID: "tcp", Address: *addr})); err != nil {
		log.Fatal(err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		if err := server.Serve(); err != nil {
			log.Fatal(err)
		}
	}()
	<-sigs
	_ = server.Close()
}
GO
    (
        cd "$tmp"
        export GOTOOLCHAIN=auto GOFLAGS=-buildvcs=false
        go mod init wirebench.test/mochi-mqtt >/dev/null 2>&1
        go get "github.com/mochi-mqtt/server/v2@v$VERSION"
        # The sums of what the program imports (the auth hook's YAML among them).
        go mod tidy
        go build -o mochi-mqtt .
    )
    mkdir -p "$ROOT/bin"
    mv "$tmp/mochi-mqtt" "$ROOT/bin/mochi-mqtt"
fi
link_cached_peer
