#!/usr/bin/env bash
# rumqttd (crate rumqttd), pinned, as an MQTT broker for `mqtt.broker=rumqttd`, built
# with cargo from crates.io into target/peers/rumqttd-VERSION/bin/rumqttd. The build is
# kept once per machine in WIREBENCH_PEERS_CACHE (default ~/.cache/wirebench). Its own
# Cargo.lock is not used (`cargo install` without --locked): the locked dependencies of
# 0.20.0 no longer build on this toolchain. Several minutes, once; idempotent.
#
#   bash scripts/install-rumqttd.sh [--help]
set -euo pipefail
# shellcheck source=scripts/lib/cached-peer.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cached-peer.sh"
script_help "${BASH_SOURCE[0]}" "${1:-}"
cd "$(dirname "$0")/.."

VERSION=0.20.0
cached_peer rumqttd-$VERSION

built() { [[ -x $1/bin/rumqttd ]]; }
if built "$LINK"; then
    exit 0
fi
if ! built "$ROOT"; then
    echo "install-rumqttd.sh: building rumqttd $VERSION into $ROOT (several minutes, once per machine)" >&2
    cargo install --quiet --root "$ROOT" rumqttd --version "$VERSION"
fi
link_cached_peer
