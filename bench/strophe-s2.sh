#!/usr/bin/env bash
# Study S2 with a real XMPP client library: Strophe.js 5.0.0 under Node (not a browser)
# against `wirebench serve`'s WebSocket (RFC 7395) and BOSH (XEP-0124/0206) endpoints on
# 127.0.0.1: connect, authenticate (SCRAM), 100 XEP-0199 pings each waiting for its pong.
#
#   bench/strophe-s2.sh [--quick] [--help]
#
# Each transport runs REPEATS times; BOSH runs twice more as often, with and without a
# flush after each ping (Strophe's BOSH transport sends a queued stanza from a 100 ms idle
# timer unless the page calls connection.flush()). Prints one JSON line per run and the
# medians.
#
# Needs node and npm (Debian: nodejs, npm); the npm packages pinned in
# bench/strophe-s2/package.json are installed into target/strophe-s2. Environment:
#   WB        wirebench binary (default $REPO/target/release/wirebench; built if missing)
#   REPEATS   runs per transport (default 5; --quick: 1)
#   PINGS     pings per run (default 100)
#
# Exit status: 0 when every run completed.

# shellcheck disable=SC2317  # cleanup is called through trap
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
QUICK=0
for a in "$@"; do
    case $a in
    --quick) QUICK=1 ;;
    -h | --help)
        sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
        exit 0
        ;;
    *)
        echo "strophe-s2.sh: unknown argument: $a (try --help)" >&2
        exit 2
        ;;
    esac
done
((QUICK)) && : "${REPEATS:=1}"
REPEATS=${REPEATS:-5}
PINGS=${PINGS:-100}
for v in REPEATS PINGS; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || {
        echo "strophe-s2.sh: $v must be a positive integer (got '${!v}')" >&2
        exit 2
    }
done
die() {
    echo "strophe-s2.sh: error: $*" >&2
    exit 1
}
{ command -v node >/dev/null && command -v npm >/dev/null; } || die "needs node and npm (apt-get install nodejs npm)"

WB=${WB:-$REPO/target/release/wirebench}
if [[ ! -x $WB ]]; then
    (cd "$REPO" && cargo build --release -p wirebench) || die "cannot build wirebench"
fi
JS=$REPO/target/strophe-s2
mkdir -p "$JS"
cp "$REPO/bench/strophe-s2/package.json" "$REPO/bench/strophe-s2/s2.mjs" "$JS/"
(cd "$JS" && npm install --no-audit --no-fund --silent) || die "npm install failed in $JS"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
XMPP=$(free_port)
WS=$(free_port)
BOSH=$(free_port)
LOG=$(mktemp /tmp/wirebench-strophe-s2.XXXXXX.log)
# --xmpp-websocket-max-rate 0: a ping-pong at full speed is what is measured, not
# a chat client the gateway's default rate limit (64 KiB/s a session) is sized for.
"$WB" serve --quiet --listen 127.0.0.1:0 --xmpp "127.0.0.1:$XMPP" --xmpp-users 10 \
    --xmpp-websocket "127.0.0.1:$WS" --xmpp-websocket-max-rate 0 --xmpp-bosh "127.0.0.1:$BOSH" 2>"$LOG" &
SERVE=$!
cleanup() { kill "$SERVE" 2>/dev/null || true; wait "$SERVE" 2>/dev/null || true; }
trap cleanup EXIT
for _ in $(seq 100); do
    grep -q "XMPP over BOSH" "$LOG" && break
    sleep 0.05
done
grep -q "XMPP over BOSH" "$LOG" || die "wirebench serve did not start: $(cat "$LOG")"

RESULTS=$(mktemp /tmp/wirebench-strophe-s2.XXXXXX.jsonl)
run() {
    node "$JS/s2.mjs" "$@" | grep "^{" | tee -a "$RESULTS"
}
for _ in $(seq "$REPEATS"); do
    run "ws://127.0.0.1:$WS/xmpp-websocket" "user1@wirebench.test" pass1 "$PINGS"
    run "http://127.0.0.1:$BOSH/http-bind" "user2@wirebench.test" pass2 "$PINGS" flush
    run "http://127.0.0.1:$BOSH/http-bind" "user3@wirebench.test" pass3 "$PINGS"
done
python3 - "$RESULTS" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
groups = {}
for r in runs:
    key = ("websocket" if r["url"].startswith("ws") else "bosh") + (" + flush" if r.get("flush") else "")
    groups.setdefault(key, []).append((r["total_ms"], r["login_ms"]))
for k, v in groups.items():
    t = [x[0] for x in v]
    login = statistics.median(x[1] for x in v)
    print(f"{k}: total median {statistics.median(t):.1f} ms over {len(t)} runs (min {min(t):.1f}, "
          f"max {max(t):.1f}), of which login {login:.1f} ms")
PY
