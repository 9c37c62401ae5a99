#!/usr/bin/env bash
# The built-in XMPP server's relay cost on loopback (127.0.0.1 only), against raw TCP.
#
#   bench/xmpp-builtin.sh [--quick] [--help]
#
# One message between two sessions through the server is one relay hop: client1 ->
# server -> client2 and back. Issue #13's target: its p50 at most 2x a raw TCP
# ping-pong's p50 (no relay). Measured in the same run, alternating, REPEATS times:
#   sockperf ping-pong --tcp -m 64 --full-rtt     raw TCP, 64 B, sockperf's own client/server
#   wirebench run --payload 43                    wirebench's raw frames (43 + 21 = 64 B)
#   wirebench run --protocol xmpp --payload 2     2-byte chat bodies through the built-in server
#   bench/lib/relay-limit.c                       the limit: two sockets, one epoll loop, no XML
# and prints xmpp / raw (issue #33: <= 2.0) and xmpp / limit (<= 1.2); then the same
# ping-pong over the WebSocket and BOSH gateways against the limit through three relays
# (a gateway each side of the server), and each gateway pass's added p50 against a
# minimal relay pass's (the limit through three relays less through one, over four
# passes; target <= 1.2); first in the
# machine's own state, then with idle CPUs polling (/dev/cpu_dma_latency = 0, root only),
# the state where wake-ups are cheap.
#
# Then the price of a worker hand-off: `wirebench serve --xmpp` with two worker processes,
# each on its own port (--xmpp-port-per-worker), and the `hold_sessions` example's
# ping-pong (one mio loop, two sessions) with both sessions on worker 0 ("same worker")
# or one on each ("across workers": every message crosses the workers' Unix socket
# pair), alternating; prints across / same. Then Prosody and ejabberd (one server each,
# loopback, configured as in bench/lib/xmpp-peers.sh) with the same ping-pong client:
# prosody / built-in and ejabberd / built-in.
#
# Environment: WB (wirebench binary; default target/release/wirebench, built if missing),
# ROUNDS (default 20000, --quick 2000), REPEATS (default 3, --quick 1),
# SECONDS_PER_TEST (sockperf, default 5, --quick 2).
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
        echo "xmpp-builtin.sh: unknown argument $a (try --help)" >&2
        exit 2
        ;;
    esac
done
if ((QUICK)); then
    : "${ROUNDS:=2000}" "${REPEATS:=1}" "${SECONDS_PER_TEST:=2}"
else
    : "${ROUNDS:=20000}" "${REPEATS:=3}" "${SECONDS_PER_TEST:=5}"
fi

die() {
    echo "xmpp-builtin.sh: $*" >&2
    exit 1
}
for t in sockperf jq; do
    command -v "$t" >/dev/null || die "$t is missing: apt-get install -y sockperf jq"
done
WB=${WB:-$REPO/target/release/wirebench}
if [[ ! -x $WB ]]; then
    (cd "$REPO" && cargo build --release -p wirebench) || die "cargo build failed"
fi
HOLD=$REPO/target/release/examples/hold_sessions
(cd "$REPO" && cargo build --release -q -p wirebench-xmpp-load --example hold_sessions) ||
    die "cargo build failed"

LOG=$(mktemp -d /tmp/wirebench-xmpp-bench.XXXXXX)
# shellcheck source=bench/lib/xmpp-peers.sh
source "$REPO/bench/lib/xmpp-peers.sh"
SP_PID=
WB_PID=
SERVER_PID=
cleanup() {
    local pid
    for pid in $SP_PID $WB_PID $SERVER_PID; do
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

PORT=$((20000 + RANDOM % 40000))
sockperf server --tcp -i 127.0.0.1 -p "$PORT" >"$LOG/sockperf-server.log" 2>&1 &
SP_PID=$!
sleep 1
kill -0 "$SP_PID" 2>/dev/null || die "sockperf server did not start; see $LOG/sockperf-server.log"

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# wb_p50 NAME ARGS...: a wirebench ping-pong case's rtt.p50 in microseconds.
wb_p50() {
    local name=$1 out
    shift
    out=$LOG/$name.jsonl
    "$WB" run --json --no-report --out "$LOG/$name-results" --workload pingpong --rounds "$ROUNDS" "$@" >"$out" 2>"$LOG/$name.err" ||
        die "wirebench $* failed; see $LOG/$name.err"
    rm -rf "$LOG/$name-results"
    jq -Rr 'fromjson? | select(type == "object" and has("metrics")) | .metrics["rtt.p50"].value * 1e7 | round / 10' "$out" | tail -n 1
}

# The limit: two sockets and one epoll loop, no XML (bench/lib/relay-limit.c), with
# messages of 100 B (the XMPP ping-pong's are 82-121 B on the wire).
LIMIT=$LOG/relay-limit
cc -O2 -pthread -o "$LIMIT" "$REPO/bench/lib/relay-limit.c" || die "cc failed on bench/lib/relay-limit.c"
# limit_p50 [RELAYS [shared]]: the limit's p50 through RELAYS relays in a chain (default
# 1); with shared, the first and the last relay are one thread, as one gateway is.
limit_p50() {
    "$LIMIT" "$((20000 + RANDOM % 40000))" "$ROUNDS" 100 "${1:-1}" ${2:+"$2"} >"$LOG/limit.out" 2>&1 ||
        die "relay-limit failed: $(cat "$LOG/limit.out")"
    sed -n 's/.* p50 \([0-9.]*\) us.*/\1/p' "$LOG/limit.out"
}

# relay_state NAME: the relay's ratios in the machine's present state, REPEATS rounds of
# sockperf, wirebench raw, xmpp through the built-in server and the limit, alternating.
relay_state() {
    local state=$1 i sp raw xmpp limit
    local SP=() RAW=() XMPP=() LIM=()
    echo "-- machine state: $state"
    for ((i = 1; i <= REPEATS; i++)); do
        sockperf ping-pong --tcp -i 127.0.0.1 -p "$PORT" -m 64 -t "$SECONDS_PER_TEST" --full-rtt >"$LOG/sockperf-$state-$i.log" 2>&1 ||
            die "sockperf client failed; see $LOG/sockperf-$state-$i.log"
        SP+=("$(awk '/percentile 50.000 =/ { print $NF }' "$LOG/sockperf-$state-$i.log" | tail -n 1)")
        RAW+=("$(wb_p50 "raw-$state-$i" --payload 43)")
        XMPP+=("$(wb_p50 "xmpp-$state-$i" --protocol xmpp --payload 2)")
        LIM+=("$(limit_p50)")
        echo "  [$i] sockperf p50 ${SP[-1]} us   wirebench raw p50 ${RAW[-1]} us   xmpp (built-in server) p50 ${XMPP[-1]} us   relay limit p50 ${LIM[-1]} us"
    done
    sp=$(median "${SP[@]}")
    raw=$(median "${RAW[@]}")
    xmpp=$(median "${XMPP[@]}")
    limit=$(median "${LIM[@]}")
    echo "== $state, medians of $REPEATS: sockperf $sp us, wirebench raw $raw us, xmpp built-in $xmpp us, relay limit $limit us"
    awk -v x="$xmpp" -v s="$sp" -v r="$raw" -v l="$limit" -v st="$state" 'BEGIN {
        printf "== %s: xmpp / wirebench raw p50 %.2f (target <= 2.0) %s; xmpp / relay limit %.2f (target <= 1.2) %s; xmpp / sockperf %.2f; limit / raw %.2f\n",
            st, x / r, (x / r <= 2.0) ? "PASS" : "MISS", x / l, (x / l <= 1.2) ? "PASS" : "MISS", x / s, l / r }'
}

# gateways_state NAME: the web gateways' cost, REPEATS rounds of xmpp over TCP, over the
# RFC 7395 WebSocket gateway and over BOSH (a gateway on each side of the server: three
# relays in a chain; four gateway passes a round trip), and the limit through one and
# through three relays, alternating. A gateway pass's added cost, (gateway - tcp) / 4,
# is set against a minimal relay pass's, (limit 3 relays - limit 1 relay) / 4: both are
# four more passes through a relay in the same round trip. The limit through three relays
# is measured twice: a thread per relay, and with the first and last relay one thread
# (the gateway's shape: one thread serves both clients' sessions), so that what the
# shape costs in wake-ups is told apart from what the gateway's code costs.
gateways_state() {
    local state=$1 i tcp ws bosh limit1 limit3 limit3s
    local TCP=() WS=() BOSH=() LIM1=() LIM3=() LIM3S=()
    for ((i = 1; i <= REPEATS; i++)); do
        TCP+=("$(wb_p50 "gw-tcp-$state-$i" --protocol xmpp --payload 2)")
        WS+=("$(wb_p50 "gw-ws-$state-$i" --protocol xmpp --payload 2 --xmpp-transport websocket)")
        BOSH+=("$(wb_p50 "gw-bosh-$state-$i" --protocol xmpp --payload 2 --xmpp-transport bosh)")
        LIM1+=("$(limit_p50 1)")
        LIM3+=("$(limit_p50 3)")
        LIM3S+=("$(limit_p50 3 shared)")
        echo "  [$i] xmpp over tcp p50 ${TCP[-1]} us   websocket ${WS[-1]} us   bosh ${BOSH[-1]} us   limit, 1 relay ${LIM1[-1]} us, 3 relays ${LIM3[-1]} us, 3 relays with the outer two one thread ${LIM3S[-1]} us"
    done
    tcp=$(median "${TCP[@]}")
    ws=$(median "${WS[@]}")
    bosh=$(median "${BOSH[@]}")
    limit1=$(median "${LIM1[@]}")
    limit3=$(median "${LIM3[@]}")
    limit3s=$(median "${LIM3S[@]}")
    awk -v t="$tcp" -v w="$ws" -v b="$bosh" -v l1="$limit1" -v l="$limit3" -v ls="$limit3s" -v st="$state" 'BEGIN {
        p = (l - l1) / 4
        q = (ls - l1) / 4
        printf "== %s gateways: websocket / limit(3 relays) %.2f, bosh / limit(3 relays) %.2f; added per pass: websocket %.1f us, bosh %.1f us, minimal relay %.1f us; per pass websocket / relay %.2f, bosh / relay %.2f (target <= 1.2)\n",
            st, w / l, b / l, (w - t) / 4, (b - t) / 4, p, (p > 0 ? (w - t) / 4 / p : 0), (p > 0 ? (b - t) / 4 / p : 0)
        printf "== %s gateways against a minimal relay of their shape (outer relays one thread): pass %.1f us; websocket / it %.2f, bosh / it %.2f\n",
            st, q, (q > 0 ? (w - t) / 4 / q : 0), (q > 0 ? (b - t) / 4 / q : 0) }'
}

relay_state default
gateways_state default
# The cheap wake-up state: /dev/cpu_dma_latency at 0 keeps idle CPUs polling (the
# haltpoll and intel_idle drivers honour it) for as long as the file stays open.
if { exec 3>/dev/cpu_dma_latency; } 2>/dev/null; then
    printf '\x00\x00\x00\x00' >&3
    relay_state busy-poll
    gateways_state busy-poll
    exec 3>&-
else
    echo "-- machine state busy-poll: skipped (writing /dev/cpu_dma_latency needs root)"
fi
echo "   raw outputs: $LOG"

# The worker hand-off.
XPORT=$((40000 + RANDOM % 20000))
"$WB" serve --quiet --listen 127.0.0.1:0 --xmpp "127.0.0.1:$XPORT" --xmpp-workers 2 --xmpp-processes \
    --xmpp-port-per-worker >"$LOG/serve.log" 2>&1 &
WB_PID=$!
for _ in $(seq 100); do
    grep -q "XMPP layout" "$LOG/serve.log" 2>/dev/null && break
    kill -0 "$WB_PID" 2>/dev/null || die "wirebench serve did not start; see $LOG/serve.log"
    sleep 0.05
done
sleep 0.5
grep "XMPP layout" "$LOG/serve.log" | sed 's/^wirebench serve: /== /'
# hold_p50 ADDRS: the ping-pong's p50 in microseconds.
hold_p50() {
    "$HOLD" "$1" wirebench.test 2 --hold 0 --pingpong "$ROUNDS" >"$LOG/hold.out" 2>&1 ||
        die "hold_sessions failed: $(cat "$LOG/hold.out")"
    sed -n 's/.* p50 \([0-9.]*\) us.*/\1/p' "$LOG/hold.out"
}
SAME=() ACROSS=()
for ((i = 1; i <= REPEATS; i++)); do
    SAME+=("$(hold_p50 "127.0.0.1:$XPORT")")
    ACROSS+=("$(hold_p50 "127.0.0.1:$XPORT,127.0.0.1:$((XPORT + 1))")")
    echo "  [$i] same worker p50 ${SAME[-1]} us   across workers p50 ${ACROSS[-1]} us"
done
same=$(median "${SAME[@]}")
across=$(median "${ACROSS[@]}")
echo "== medians of $REPEATS: same worker $same us, across workers $across us: across / same $(awk -v a="$across" -v b="$same" 'BEGIN { printf "%.2f", a / b }')"

# Prosody, one server, the same client.
PPORT=$((30000 + RANDOM % 10000))
start_prosody "$LOG/prosody" "$PPORT" 2
PROS=()
for ((i = 1; i <= REPEATS; i++)); do
    PROS+=("$(hold_p50 "127.0.0.1:$PPORT")")
    echo "  [$i] prosody p50 ${PROS[-1]} us"
done
pros=$(median "${PROS[@]}")
echo "== median of $REPEATS: prosody $pros us: prosody / built-in (same worker) $(awk -v a="$pros" -v b="$same" 'BEGIN { printf "%.2f", a / b }')"
kill "$SERVER_PID" 2>/dev/null || true
wait "$SERVER_PID" 2>/dev/null || true

# ejabberd, one server, the same client. Its first stanzas load code (PEERS.md: 35-124 ms):
# a warm-up ping-pong first.
EPORT=$((30000 + RANDOM % 10000))
start_ejabberd "$LOG/ejabberd" "$EPORT" 2
"$HOLD" "127.0.0.1:$EPORT" wirebench.test 2 --hold 0 --pingpong 200 >/dev/null 2>&1 || true
EJ=()
for ((i = 1; i <= REPEATS; i++)); do
    EJ+=("$(hold_p50 "127.0.0.1:$EPORT")")
    echo "  [$i] ejabberd p50 ${EJ[-1]} us"
done
ej=$(median "${EJ[@]}")
echo "== median of $REPEATS: ejabberd $ej us: ejabberd / built-in (same worker) $(awk -v a="$ej" -v b="$same" 'BEGIN { printf "%.2f", a / b }'), ejabberd / prosody $(awk -v a="$ej" -v b="$pros" 'BEGIN { printf "%.2f", a / b }')"
