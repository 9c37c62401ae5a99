#!/usr/bin/env bash
# Memory per idle session and logins per second of the built-in XMPP server, on loopback.
#
#   bench/xmpp-sessions.sh [--quick] [--help]
#
# Starts `wirebench serve --xmpp --xmpp-sessions SESSIONS` (worker processes when one
# process cannot hold them: 20,000 open files per process here), reads the RSS of the
# server and its workers, logs in SESSIONS client sessions from several client processes
# (the `hold_sessions` example: one mio loop driving the sans-IO client engine, 512 logins
# in flight, at most 16,000 sessions each, each from its own 127.0.0.x source address),
# reads the RSS again while they are held, and prints
#   (RSS after - RSS before) / SESSIONS     issue #13's target: <= 4 KiB at 100k sessions
#   logins/s (PLAIN, no TLS)                issue #13's target: >= 10k/s
# and the kernel's TCP memory (/proc/net/sockstat) for the record. The client processes
# share the machine's two cores with the server: the login rate is the pair's.
#
# Not measured here yet: Prosody and ejabberd at the count each holds (issue #13).
#
# Environment: SESSIONS (default 100000, --quick 2000), MECH (PLAIN, SCRAM-SHA-1 or
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
if ((QUICK)); then : "${SESSIONS:=2000}"; else : "${SESSIONS:=100000}"; fi
: "${MECH:=PLAIN}"

die() {
    echo "xmpp-sessions.sh: $*" >&2
    exit 1
}
# Two builds: with --example, cargo builds only that target of every package named.
(cd "$REPO" && cargo build --release -p wirebench && cargo build --release -p wirebench-plugin-xmpp --example hold_sessions) ||
    die "cargo build failed"
WB=${WB:-$REPO/target/release/wirebench}
HOLD=$REPO/target/release/examples/hold_sessions

LOG=$(mktemp -d /tmp/wirebench-xmpp-sessions.XXXXXX)
SERVER_PID=
CLIENT_PIDS=()
# Clients first, all at once: each closes its sessions properly on SIGTERM (a few seconds),
# so no source port is left in TIME_WAIT for the next run. Then the server.
cleanup() {
    local pid
    for pid in "${CLIENT_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${CLIENT_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The server's RSS: the serve process and its worker processes (children by PID).
rss_kib() {
    local total=0 pid
    for pid in "$1" $(cat "/proc/$1/task/"*/children 2>/dev/null); do
        total=$((total + $(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")))
    done
    echo "$total"
}
tcp_mem_pages() { awk '/^TCP:/ { for (i = 1; i < NF; i++) if ($i == "mem") print $(i + 1) }' /proc/net/sockstat; }

CTL=$((20000 + RANDOM % 20000))
XMPP=$((40000 + RANDOM % 20000))
"$WB" serve --quiet --listen "127.0.0.1:$CTL" --xmpp "127.0.0.1:$XMPP" --xmpp-users "$SESSIONS" \
    --xmpp-sessions "$SESSIONS" >"$LOG/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do
    grep -q "XMPP layout" "$LOG/server.log" && break
    kill -0 "$SERVER_PID" 2>/dev/null || die "server did not start: $(cat "$LOG/server.log")"
    sleep 0.05
done
sleep 1
grep "XMPP layout" "$LOG/server.log" | sed 's/^wirebench serve: /== /'
rss0=$(rss_kib "$SERVER_PID")
mem0=$(tcp_mem_pages)

PER=16000  # ports 10000+ of one source address each (hold_sessions --from)
CLIENTS=$(((SESSIONS + PER - 1) / PER))
t0=$(date +%s.%N)
for ((k = 0; k < CLIENTS; k++)); do
    first=$((k * PER + 1))
    n=$((SESSIONS - k * PER < PER ? SESSIONS - k * PER : PER))
    "$HOLD" "127.0.0.1:$XMPP" wirebench.test "$n" --first "$first" --hold 600 --mech "$MECH" \
        --from "127.0.0.$((k + 1))" >"$LOG/client$k.log" 2>&1 &
    CLIENT_PIDS+=($!)
done
for ((k = 0; k < CLIENTS; k++)); do
    for _ in $(seq 3000); do
        grep -q "^established" "$LOG/client$k.log" && break
        kill -0 "${CLIENT_PIDS[k]}" 2>/dev/null || die "client $k failed: $(cat "$LOG/client$k.log")"
        sleep 0.1
    done
    grep -q "^established" "$LOG/client$k.log" || die "client $k: sessions not established within 300 s"
done
t1=$(date +%s.%N)
sleep 3
rss1=$(rss_kib "$SERVER_PID")
mem1=$(tcp_mem_pages)
established=$(cat "$LOG"/client*.log | awk '/^established/ { n += $2; f += $(NF - 1) + 0 } END { print n }')
failed=$(cat "$LOG"/client*.log | sed -n 's/.*(\([0-9]*\) failed).*/\1/p' | awk '{ f += $1 } END { print f + 0 }')
per=$(awk -v a="$rss0" -v b="$rss1" -v n="$established" 'BEGIN { printf "%.2f", (b - a) / n }')
rate=$(awk -v a="$t0" -v b="$t1" -v n="$established" 'BEGIN { printf "%.0f", n / (b - a) }')
echo "== $established of $SESSIONS sessions established ($failed failed, $MECH) by $CLIENTS client processes: $rate logins/s (target >= 10k/s)"
echo "== server RSS ${rss0} KiB -> ${rss1} KiB: $per KiB per idle session (target <= 4 KiB)"
echo "== kernel TCP memory ${mem0} -> ${mem1} pages (both ends, all sockets on this machine)"
echo "   logs: $LOG"
