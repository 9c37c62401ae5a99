#!/usr/bin/env bash
# Accuracy and speed of wirebench's link emulator (needs root: it builds network
# namespaces). Traffic stays inside namespaces this script's runs create.
#
#   bench/link.sh [--quick] [--help]
#
# 1. 2400 bit/s ping-pong (2-byte payload), delay 0 / 0.5 / 1 s: measured stable RTT
#    against the model's expectation (rtt.model: one 75-byte segment each way plus
#    delay), and the growth of the stable RTT against 2 x delay.
#    Targets: |stable - model| <= 1 ms; growth = 2 x delay.
# 2. 1 Gbit/s + 10 ms, queue 4 MiB (> one bandwidth-delay product of 2.5 MB): one TCP
#    flow's rate on the wire and its goodput; the emulator's release error and CPU.
#    Targets: wire rate >= 95% of 1 Gbit/s; release error p99 <= 50 us; CPU <= 1 core.
# 2c. The per-packet time accounting (docs/links.md: one-way delays and the queue
#    series) on and off, the 1 Gbit/s case alternately: wire rate and emulator CPU as
#    ratios. Target: wire rate ratio >= 0.99.
# 3. Long-run rate: 20 s saturating 10 Mbit/s; IP bits delivered / time vs the rate.
#    Target: error < 0.1%.
#
# There is no reference emulator in the same run: Mahimahi is not packaged for this
# Debian, and the kernel has no netem. The reference is the link model itself (exact
# integer arithmetic, unit-tested in foundation/link), so the figures below are the
# emulator's departures from theory. Results: docs/performance.md.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
QUICK=0
for a in "$@"; do
    case $a in
    --quick) QUICK=1 ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "link.sh: unknown argument: $a (try --help)" >&2
        exit 2
        ;;
    esac
done
WB=${WB:-$REPO/target/release/wirebench}
OUT=${OUT:-$(mktemp -d /tmp/wirebench-link.XXXXXX)}

[[ $(id -u) == 0 ]] || { echo "bench/link.sh: needs root (network namespaces)" >&2; exit 2; }
command -v jq >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q jq >/dev/null
if [[ ! -x $WB ]]; then (cd "$REPO" && cargo build --release -p wirebench); fi

ROUNDS=10 COUNT_G=5000 COUNT_R=200 REPEAT=3
((QUICK)) && ROUNDS=4 COUNT_G=2000 COUNT_R=40 REPEAT=1

run() { # run NAME ARGS...: one wirebench run, JSON lines kept in $OUT/NAME.jsonl
    local name=$1
    shift
    echo "  \$ wirebench run $*" >&2
    "$WB" run --json --quiet --out "$OUT/$name" "$@" >"$OUT/$name.jsonl" 2>"$OUT/$name.err" ||
        { echo "wirebench failed, see $OUT/$name.err" >&2; exit 1; }
}

echo "== wirebench link emulator accuracy ($(date -u +%FT%TZ), $(uname -r), $(nproc) cpus)"
echo "raw outputs: $OUT"

echo "-- 1. 2400 bit/s ping-pong, 2-byte payload"
run rtt2400 --workload pingpong --payload 2 --rounds "$ROUNDS" --link-rate 2400bit --link-delay 0,500ms,1s
jq -r '"  delay \(.labels["link.delay"])  stable \(.metrics["rtt.stable"].value*1000 | .*1000|round/1000) ms  model \(.metrics["rtt.model"].value*1000) ms  diff \((.metrics["rtt.stable"].value - .metrics["rtt.model"].value)*1000 | .*1000|round/1000) ms  p99 \(.metrics["rtt.p99"].value*1000 | .*1000|round/1000) ms  first \(.metrics["rtt.first"].value*1000 | .*1000|round/1000) ms"' "$OUT/rtt2400.jsonl"
jq -rs '
  (.[0].metrics["rtt.stable"].value) as $s0 |
  .[1:][] | "  growth at delay \(.labels["link.delay"]): \((.metrics["rtt.stable"].value - $s0)*1000 | .*1000|round/1000) ms (2 x delay = \(.params["link.delay"]*2000) ms)"' "$OUT/rtt2400.jsonl"
worst=$(jq -s 'map((.metrics["rtt.stable"].value - .metrics["rtt.model"].value) | fabs) | max * 1000' "$OUT/rtt2400.jsonl")
echo "  worst |stable - model| = $(printf %.3f "$worst") ms (target <= 1 ms)"

echo "-- 2. 1 Gbit/s + 10 ms, queue 4 MiB, one TCP flow (128 KiB writes)"
run gig --workload stream --payload 128KiB --count "$COUNT_G" --repeat "$REPEAT" --link "rate=1Gbit,delay=10ms,queue=4MiB"
jq -r '"  run \(.repeat): wire \((.metrics["wire.up.bytes"].value*8/.metrics["throughput.duration"].value/1e6)|round) Mbit/s (\((.metrics["wire.up.bytes"].value*8/.metrics["throughput.duration"].value/1e7)|.*100|round/100)% of rate), goodput \((.metrics["throughput.bits_per_s"].value/1e6)|round) Mbit/s, release error p50 \(.metrics["link.release_error.p50"].value*1e6|.*10|round/10) us p99 \(.metrics["link.release_error.p99"].value*1e6|.*10|round/10) us max \(.metrics["link.release_error.max"].value*1e6|round) us, emulator \(.metrics["link.emulator_cpu"].value|.*100|round/100) cores, queue drops \(.metrics["link.dropped.queue"].value)"' "$OUT/gig.jsonl"

echo "-- 2b. the same link with iperf3 (a client nobody here wrote) through wirebench shell"
if command -v iperf3 >/dev/null; then
    # iperf3's server here in the root namespace (198.18.0.1 inside the shell), its client
    # in the shell's host: one CUBIC flow, 10 s, upload. TCP/IP limit at MTU 1500 with
    # timestamps: 1448 payload bytes per 1500-byte IP packet, 965.3 Mbit/s at 1 Gbit/s.
    port=$((20000 + RANDOM % 20000))
    iperf3 -s -1 -p "$port" >"$OUT/iperf3-server.log" 2>&1 &
    ipid=$!
    "$WB" shell --link "rate=1Gbit,delay=10ms,queue=4MiB" -- bash -c \
        "sleep 1; iperf3 -c 198.18.0.1 -p $port -t 10 -J" >"$OUT/iperf3.json" 2>"$OUT/iperf3-shell.err" ||
        echo "  iperf3 through the shell failed: $OUT/iperf3-shell.err" >&2
    kill "$ipid" 2>/dev/null || true
    wait "$ipid" 2>/dev/null || true
    jq -r '.end.sum_received.bits_per_second as $g |
      "  iperf3 goodput \($g/1e6|round) Mbit/s = \($g/965.3e6*100|.*10|round/10)% of the TCP/IP limit (target >= 95%); retransmits \(.end.sum_sent.retransmits)"' \
        "$OUT/iperf3.json" 2>/dev/null || echo "  (no iperf3 result: $OUT/iperf3.json)"
    grep -h "queue\|dropped" "$OUT/iperf3-shell.err" | sed 's/^/  shell: /' || true
else
    echo "  iperf3 is missing (apt-get install -y iperf3): skipped"
fi

echo "-- 2c. the per-packet time accounting (one-way delays, queue series) on and off"
# The same 1 Gbit/s case, alternately with the accounting (the default) and without it
# (WIREBENCH_LINK_TIMES=0), so drift on this machine falls on both alike.
for i in $(seq "$REPEAT"); do
    run "times-on-$i" --workload stream --payload 128KiB --count "$COUNT_G" --link "rate=1Gbit,delay=10ms,queue=4MiB"
    WIREBENCH_LINK_TIMES=0 run "times-off-$i" --workload stream --payload 128KiB --count "$COUNT_G" --link "rate=1Gbit,delay=10ms,queue=4MiB"
done
summary() { # summary NAME: over NAME-*.jsonl, mean wire rate (Mbit/s), release error p99 (us), emulator cores
    cat "$OUT/$1"-*.jsonl | jq -s '[
        (map(.metrics["wire.up.bytes"].value*8/.metrics["throughput.duration"].value) | add/length/1e6),
        (map(.metrics["link.release_error.p99"].value) | add/length*1e6),
        (map(.metrics["link.emulator_cpu"].value) | add/length)] | map(.*100|round/100) | @tsv' -r
}
read -r on_rate on_err on_cpu <<<"$(summary times-on)"
read -r off_rate off_err off_cpu <<<"$(summary times-off)"
echo "  on:  wire $on_rate Mbit/s, release error p99 $on_err us, emulator $on_cpu cores"
echo "  off: wire $off_rate Mbit/s, release error p99 $off_err us, emulator $off_cpu cores"
echo "  ratio on/off: wire rate $(jq -n "$on_rate/$off_rate*1000|round/1000") (target >= 0.99), emulator CPU $(jq -n "$on_cpu/$off_cpu*100|round/100")"
jq -r '"  one-way delay (on): p50 \(.metrics["link.one_way.p50"].value*1e3|.*100|round/100) ms, p95 \(.metrics["link.one_way.p95"].value*1e3|.*100|round/100) ms, max \(.metrics["link.one_way.max"].value*1e3|.*100|round/100) ms (10 ms of delay plus the queue)"' "$OUT/times-on-1.jsonl"

echo "-- 3. long-run rate: 10 Mbit/s saturated"
run rate --workload stream --payload 128KiB --count "$COUNT_R" --link 10Mbit
jq -r '(.metrics["wire.up.bytes"].value*8/.metrics["throughput.duration"].value) as $r |
  "  \(.metrics["throughput.duration"].value|.*100|round/100) s: wire rate \($r) bit/s, error \((($r-1e7)/1e7*100)|.*10000|round/10000)% (queue drops \(.metrics["link.dropped.queue"].value), counted by the emulator)"' "$OUT/rate.jsonl"
echo "  (the timed interval runs from the first write to the last byte received, so it"
echo "   also holds the first packet's serialization: a bias of one packet per run)"
