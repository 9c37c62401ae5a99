#!/usr/bin/env bash
# Memory per idle session and logins per second of the built-in XMPP server, on loopback.
#
#   bench/xmpp-sessions.sh [--quick] [--help]
#
# Starts `wirebench serve --xmpp` (one process, one event loop), reads its RSS, logs in
# SESSIONS client sessions from a second process (the `hold_sessions` example: one mio
# loop driving the sans-IO client engine, 512 logins in flight), reads the server's RSS
# again while they are held, and prints
#   (RSS after - RSS before) / SESSIONS     issue #13's target: <= 4 KiB at 100k sessions
#   logins/s (PLAIN, no TLS)                issue #13's target: >= 10k/s
# and the kernel's TCP memory (/proc/net/sockstat) for the record.
#
# One process holds at most ~18k sessions (20,000 open files per process on these
# machines, the client needs as many): 100k needs several workers, not there yet. The
# reference peers (Prosody, ejabberd at the count each holds) are not measured here yet.
#
# Environment: SESSIONS (default 15000, --quick 2000), MECH (PLAIN, SCRAM-SHA-1 or
# SCRAM-SHA-256; default PLAIN), WB (wirebench binary, built if missing).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
QUICK=0
for a in "$@"; do
    case $a in
    --quick) QUICK=1 ;;
    --help | -h)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "xmpp-sessions.sh: unknown argument $a (try --help)" >&2
        exit 2
        ;;
    esac
done
if ((QUICK)); then : "${SESSIONS:=2000}"; else : "${SESSIONS:=15000}"; fi
: "${MECH:=PLAIN}"

die() {
    echo "xmpp-sessions.sh: $*" >&2
    exit 1
}
(cd "$REPO" && cargo build --release -p wirebench -p wirebench-plugin-xmpp --example hold_sessions) ||
    die "cargo build failed"
WB=${WB:-$REPO/target/release/wirebench}
HOLD=$REPO/target/release/examples/hold_sessions

LOG=$(mktemp -d /tmp/wirebench-xmpp-sessions.XXXXXX)
SERVER_PID=
CLIENT_PID=
cleanup() {
    for pid in $CLIENT_PID $SERVER_PID; do
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
tcp_mem_pages() { awk '/^TCP:/ { for (i = 1; i < NF; i++) if ($i == "mem") print $(i + 1) }' /proc/net/sockstat; }

CTL=$((20000 + RANDOM % 20000))
XMPP=$((40000 + RANDOM % 20000))
"$WB" serve --quiet --listen "127.0.0.1:$CTL" --xmpp "127.0.0.1:$XMPP" --xmpp-users "$SESSIONS" >"$LOG/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do
    grep -q "XMPP on" "$LOG/server.log" && break
    kill -0 "$SERVER_PID" 2>/dev/null || die "server did not start: $(cat "$LOG/server.log")"
    sleep 0.05
done
sleep 0.5
rss0=$(rss_kib "$SERVER_PID")
mem0=$(tcp_mem_pages)

"$HOLD" "127.0.0.1:$XMPP" wirebench.test "$SESSIONS" 30 "$MECH" >"$LOG/client.log" 2>&1 &
CLIENT_PID=$!
for _ in $(seq 1200); do
    grep -q "^established" "$LOG/client.log" && break
    kill -0 "$CLIENT_PID" 2>/dev/null || die "client failed: $(cat "$LOG/client.log")"
    sleep 0.1
done
grep -q "^established" "$LOG/client.log" || die "sessions not established within 120 s"
sleep 2
rss1=$(rss_kib "$SERVER_PID")
mem1=$(tcp_mem_pages)
line=$(grep "^established" "$LOG/client.log")
per=$(awk -v a="$rss0" -v b="$rss1" -v n="$SESSIONS" 'BEGIN { printf "%.2f", (b - a) / n }')
echo "== $SESSIONS sessions ($MECH): $line"
echo "== server RSS ${rss0} KiB -> ${rss1} KiB: $per KiB per idle session (target <= 4 KiB)"
echo "== kernel TCP memory ${mem0} -> ${mem1} pages (both ends, all sockets on this machine)"
echo "   logs: $LOG"
