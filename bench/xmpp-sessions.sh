#!/usr/bin/env bash
# Memory per idle session and logins per second of the built-in XMPP server, on loopback,
# with Prosody and ejabberd measured the same way in the same run.
#
#   bench/xmpp-sessions.sh [--quick] [--help]
#
# Built-in server: `wirebench serve --xmpp --xmpp-sessions SESSIONS` (worker processes when
# one process cannot hold them: 20,000 open files per process here). Prosody 0.12: one
# process (single-threaded), PROSODY_SESSIONS accounts written as files before it starts
# (internal_plain storage), no TLS, c2s only. ejabberd 23.01: one Erlang VM (both cores),
# EJABBERD_SESSIONS accounts registered over its HTTP API, no TLS, c2s only, no shapers
# (bench/lib/xmpp-peers.sh). For each server: its RSS (the serve process
# plus its workers), then N client sessions logged in from several client processes (the
# `hold_sessions` example: one mio loop driving the sans-IO client engine, 512 logins in
# flight, at most 16,000 sessions each, each from its own 127.0.x.y source address), then
# its RSS again while they are held. Prints per server
#   (RSS held - RSS before) / sessions     issue #13's target: <= 4 KiB at 100k sessions
#   logins/s (PLAIN, no TLS)               issue #13's target: >= 10k/s
# the kernel's TCP memory (/proc/net/sockstat) for the record, and the ratios Prosody /
# built-in and ejabberd / built-in. The client processes share the machine's two cores with the server: a login
# rate is the pair's.
#
# Environment: SESSIONS (built-in; default 100000, --quick 2000), PROSODY_SESSIONS
# (default 18000, about what one process holds; --quick 1000; 0 skips Prosody),
# EJABBERD_SESSIONS (the same for ejabberd), MECH
# (PLAIN, SCRAM-SHA-1 or SCRAM-SHA-256; default PLAIN), WB (wirebench binary, built if
# missing).
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
if ((QUICK)); then
    : "${SESSIONS:=2000}" "${PROSODY_SESSIONS:=1000}" "${EJABBERD_SESSIONS:=1000}"
else
    : "${SESSIONS:=100000}" "${PROSODY_SESSIONS:=18000}" "${EJABBERD_SESSIONS:=18000}"
fi
: "${MECH:=PLAIN}"

die() {
    echo "xmpp-sessions.sh: $*" >&2
    exit 1
}
if ((PROSODY_SESSIONS > 0)); then
    command -v prosody >/dev/null || die "prosody is missing: apt-get install -y prosody (or PROSODY_SESSIONS=0)"
fi
if ((EJABBERD_SESSIONS > 0)); then
    { command -v erl >/dev/null && compgen -G '/usr/lib/x86_64-linux-gnu/ejabberd-*' >/dev/null; } ||
        die "ejabberd is missing: apt-get install -y ejabberd (or EJABBERD_SESSIONS=0)"
fi
# Two builds: with --example, cargo builds only that target of every package named.
(cd "$REPO" && cargo build --release -p wirebench && cargo build --release -p wirebench-xmpp-load --example hold_sessions) ||
    die "cargo build failed"
WB=${WB:-$REPO/target/release/wirebench}
HOLD=$REPO/target/release/examples/hold_sessions

LOG=$(mktemp -d /tmp/wirebench-xmpp-sessions.XXXXXX)
# shellcheck source=bench/lib/xmpp-peers.sh
source "$REPO/bench/lib/xmpp-peers.sh"
SERVER_PID=
CLIENT_PIDS=()
# Clients first, all at once: each closes its sessions properly on SIGTERM (a few seconds),
# so no source port is left in TIME_WAIT for the next run. Then the server.
stop_all() {
    local pid
    for pid in "${CLIENT_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${CLIENT_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    CLIENT_PIDS=()
    if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    SERVER_PID=
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A server's RSS: the process and its children (worker processes), by PID.
rss_kib() {
    local total=0 pid
    for pid in "$1" $(cat "/proc/$1/task/"*/children 2>/dev/null); do
        total=$((total + $(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")))
    done
    echo "$total"
}
tcp_mem_pages() { awk '/^TCP:/ { for (i = 1; i < NF; i++) if ($i == "mem") print $(i + 1) }' /proc/net/sockstat; }

# measure NAME PORT N SUBNET: logs N sessions in to the server SERVER_PID listens for on
# PORT, from client processes at SUBNET.1, SUBNET.2, ...; sets PER_KIB and RATE, and
# prints what it saw.
measure() {
    local name=$1 port=$2 n=$3 subnet=$4 per=16000 k first count rss0 rss1 mem0 mem1 t0 t1
    local clients=$(((n + per - 1) / per))
    sleep 1
    rss0=$(rss_kib "$SERVER_PID")
    mem0=$(tcp_mem_pages)
    t0=$(date +%s.%N)
    for ((k = 0; k < clients; k++)); do
        first=$((k * per + 1))
        count=$((n - k * per < per ? n - k * per : per))
        "$HOLD" "127.0.0.1:$port" wirebench.test "$count" --first "$first" --hold 600 --mech "$MECH" \
            --from "$subnet.$((k + 1))" >"$LOG/$name-client$k.log" 2>&1 &
        CLIENT_PIDS+=($!)
    done
    for ((k = 0; k < clients; k++)); do
        for _ in $(seq 6000); do
            grep -qs "^established" "$LOG/$name-client$k.log" && break
            kill -0 "${CLIENT_PIDS[k]}" 2>/dev/null || die "$name client $k failed: $(cat "$LOG/$name-client$k.log")"
            sleep 0.1
        done
        grep -q "^established" "$LOG/$name-client$k.log" || die "$name client $k: sessions not established within 600 s"
    done
    t1=$(date +%s.%N)
    sleep 3
    rss1=$(rss_kib "$SERVER_PID")
    mem1=$(tcp_mem_pages)
    local established failed
    established=$(cat "$LOG/$name"-client*.log | awk '/^established/ { n += $2 } END { print n + 0 }')
    failed=$(cat "$LOG/$name"-client*.log | sed -n 's/.*(\([0-9]*\) failed).*/\1/p' | awk '{ f += $1 } END { print f + 0 }')
    PER_KIB=$(awk -v a="$rss0" -v b="$rss1" -v n="$established" 'BEGIN { printf "%.2f", (b - a) / n }')
    RATE=$(awk -v a="$t0" -v b="$t1" -v n="$established" 'BEGIN { printf "%.0f", n / (b - a) }')
    echo "== $name: $established of $n sessions established ($failed failed, $MECH) by $clients client processes: $RATE logins/s"
    echo "== $name: RSS ${rss0} KiB -> ${rss1} KiB: $PER_KIB KiB per idle session"
    echo "== $name: kernel TCP memory ${mem0} -> ${mem1} pages (both ends, all sockets on this machine)"
    ((failed == 0)) || grep -h "first failure" "$LOG/$name"-client*.log | head -n 3
    stop_all
}

CTL=$((20000 + RANDOM % 10000))
XMPP=$((40000 + RANDOM % 20000))
"$WB" serve --quiet --listen "127.0.0.1:$CTL" --xmpp "127.0.0.1:$XMPP" --xmpp-users "$SESSIONS" \
    --xmpp-sessions "$SESSIONS" >"$LOG/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do
    grep -q "XMPP layout" "$LOG/server.log" && break
    kill -0 "$SERVER_PID" 2>/dev/null || die "server did not start: $(cat "$LOG/server.log")"
    sleep 0.05
done
grep "XMPP layout" "$LOG/server.log" | sed 's/^wirebench serve: /== built-in: /'
measure built-in "$XMPP" "$SESSIONS" 127.0.0
builtin_per=$PER_KIB builtin_rate=$RATE
echo "== built-in: targets: <= 4 KiB per idle session at 100k, >= 10k logins/s"

if ((PROSODY_SESSIONS > 0)); then
    PORT=$((30000 + RANDOM % 10000))
    start_prosody "$LOG/prosody" "$PORT" "$PROSODY_SESSIONS"
    measure prosody "$PORT" "$PROSODY_SESSIONS" 127.0.3
    echo "== prosody / built-in: memory per idle session $(awk -v a="$PER_KIB" -v b="$builtin_per" 'BEGIN { printf "%.1f", a / b }')x, logins/s $(awk -v a="$RATE" -v b="$builtin_rate" 'BEGIN { printf "%.2f", a / b }')x (built-in at $SESSIONS sessions, Prosody at $PROSODY_SESSIONS)"
fi
if ((EJABBERD_SESSIONS > 0)); then
    PORT=$((30000 + RANDOM % 10000))
    start_ejabberd "$LOG/ejabberd" "$PORT" "$EJABBERD_SESSIONS"
    measure ejabberd "$PORT" "$EJABBERD_SESSIONS" 127.0.4
    echo "== ejabberd / built-in: memory per idle session $(awk -v a="$PER_KIB" -v b="$builtin_per" 'BEGIN { printf "%.1f", a / b }')x, logins/s $(awk -v a="$RATE" -v b="$builtin_rate" 'BEGIN { printf "%.2f", a / b }')x (built-in at $SESSIONS sessions, ejabberd at $EJABBERD_SESSIONS)"
fi
echo "   logs: $LOG"
