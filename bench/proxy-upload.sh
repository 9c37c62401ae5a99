#!/usr/bin/env bash
# What a client that uploads through a proxy without reading the echo (hostile.sh's
# halfopen) costs the proxy, against the same upload from clients that read (relay), for
# our SOCKS5 proxy, our RFC 8803 converter and microsocks (Debian's, the reference), all
# on 127.0.0.1 in the same run. Issue #34: the converter's halfopen row of
# bench/hostile.sh was over 2x; this is the measurement behind docs/reliability.md's
# answer (the cost is the upload's, not the half-open state's).
#
#   bench/proxy-upload.sh [--help] [PROXY...]     PROXY: socks5 convert microsocks
#
# Each proxy fresh, in front of our echo origin (`wirebench serve --also direct=`); the
# proxy and the origin on CPU 0, the attackers (bench/lib/hostile.py halfopen or relay,
# HALF connections: halfopen's half that stop reading, relay's that read, all sending
# 1 KB every 5 ms) on CPU 1. Over WINDOW seconds of each attack it prints, per proxy and
# traffic: the proxy's and the origin's CPU time (/proc/PID/stat, user + system), the
# MiB that reached the origin (ss: bytes_received on its connections), the proxy's CPU
# per MiB reaching the origin, and the machine's TCP retransmissions and receive-queue
# prunes over the window (/proc/net/snmp RetransSegs, /proc/net/netstat PruneCalled: a
# relay whose peer's receive buffer is full and takes small segments). Then, per proxy,
# halfopen's CPU against relay's, and our proxies' CPU per MiB relayed against microsocks'.
#
# Environment: WB (wirebench binary, default target/release/wirebench, built if
# missing), HALF (100), WINDOW (6), REPEATS (2: each proxy and traffic, alternating).
# microsocks is skipped with a note when it is not installed (Debian: apt-get install
# microsocks). Needs 2 CPUs for the split; with one, everything shares it.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROXIES=()
for a in "$@"; do
    case $a in
    --help | -h)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    socks5 | convert | microsocks) PROXIES+=("$a") ;;
    *)
        echo "proxy-upload.sh: unknown argument $a (try --help)" >&2
        exit 2
        ;;
    esac
done
((${#PROXIES[@]})) || PROXIES=(socks5 convert microsocks)
: "${HALF:=100}" "${WINDOW:=6}" "${REPEATS:=2}"

die() {
    echo "proxy-upload.sh: $*" >&2
    exit 1
}
command -v python3 >/dev/null || die "python3 is missing"
command -v ss >/dev/null || die "ss (iproute2) is missing"
WB=${WB:-$REPO/target/release/wirebench}
if [[ ! -x $WB ]]; then
    (cd "$REPO" && cargo build --release -p wirebench) || die "cargo build failed"
fi
HOSTILE=$REPO/bench/lib/hostile.py
PIN=() ATTACK_PIN=()
if (($(nproc) >= 2)) && command -v taskset >/dev/null; then
    PIN=(taskset -c 0) ATTACK_PIN=(taskset -c 1)
fi
if [[ " ${PROXIES[*]} " == *" microsocks "* ]] && ! command -v microsocks >/dev/null; then
    echo "proxy-upload.sh: microsocks is not installed (apt-get install microsocks): skipped" >&2
    PROXIES=("${PROXIES[@]/microsocks/}")
    [[ -n ${PROXIES[*]// /} ]] || die "nothing to measure without microsocks"
fi

LOG=$(mktemp -d /tmp/wirebench-proxy-upload.XXXXXX)
PIDS=
# shellcheck source=bench/lib/pids.sh
. "$REPO/bench/lib/pids.sh"
# shellcheck disable=SC2086 # PIDS is a list of numbers
cleanup() { stop_pids $PIDS; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start NAME PORT CMD...: CMD in the background (on CPU 0), up once PORT accepts; its PID
# in STARTED.
start() {
    local name=$1 port=$2
    shift 2
    ${PIN[@]+"${PIN[@]}"} "$@" >"$LOG/$name.log" 2>&1 &
    STARTED=$!
    PIDS="$PIDS $STARTED"
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        kill -0 "$STARTED" 2>/dev/null || die "$name did not start; see $LOG/$name.log"
        sleep 0.05
    done
    die "$name is not listening on $port; see $LOG/$name.log"
}
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) * 1000 / hz}' "/proc/$1/stat"; }
tcp_counters() {
    awk '/^Tcp:/ && !h {split($0, k); h = 1; next} /^Tcp:/ {for (i in k) if (k[i] == "RetransSegs") r = $i}
         END {printf "%s ", r}' /proc/net/snmp
    awk '/^TcpExt:/ && !h {split($0, k); h = 1; next} /^TcpExt:/ {for (i in k) if (k[i] == "PruneCalled") p = $i}
         END {print p}' /proc/net/netstat
}
origin_bytes() {
    ss -tni state established "( sport = :$1 )" | grep -o 'bytes_received:[0-9]*' |
        awk -F: '{s += $2} END {print s + 0}'
}

OPORT=$((20000 + RANDOM % 10000))
PPORT=$((OPORT + 1))
start origin "$OPORT" "$WB" serve --listen 127.0.0.1:0 --also "direct=127.0.0.1:$OPORT"
ORIGIN_PID=$STARTED
NET=0
ROWS=$LOG/rows.tsv

# one PROXY TRAFFIC: the proxy fresh, one attack, one row in $ROWS.
one() {
    local proxy=$1 traffic=$2 proto=socks5 pid
    case $proxy in
    socks5) start socks5 "$PPORT" "$WB" serve --listen 127.0.0.1:0 --also "socks5=127.0.0.1:$PPORT" ;;
    convert)
        proto=convert
        start convert "$PPORT" "$WB" converter --listen "127.0.0.1:$PPORT" --allow 127.0.0.1
        ;;
    microsocks) start microsocks "$PPORT" microsocks -i 127.0.0.1 -p "$PPORT" ;;
    esac
    pid=$STARTED
    NET=$((NET % 250 + 1))
    rm -f "$LOG/ready"
    ${ATTACK_PIN[@]+"${ATTACK_PIN[@]}"} python3 "$HOSTILE" "$traffic" --proto "$proto" \
        --target "127.0.0.1:$PPORT" --pids "$pid" --procs 2 --ready "$LOG/ready" \
        --origin "127.0.0.1:$OPORT" --net "$NET" --conns "$HALF" --secs $((WINDOW + 3)) \
        --settle 1 >"$LOG/$proxy-$traffic.json" 2>"$LOG/$proxy-$traffic.err" &
    local attack=$!
    PIDS="$PIDS $attack"
    while [[ ! -e $LOG/ready ]] && kill -0 "$attack" 2>/dev/null; do sleep 0.05; done
    [[ -e $LOG/ready ]] || die "hostile.py $traffic failed: $(tail -n 3 "$LOG/$proxy-$traffic.err")"
    local p0 o0 b0 c0 p1 o1 b1 c1
    p0=$(cpu_ms "$pid") o0=$(cpu_ms "$ORIGIN_PID") b0=$(origin_bytes "$OPORT") c0=$(tcp_counters)
    sleep "$WINDOW"
    kill -0 "$pid" 2>/dev/null || die "$proxy exited during $traffic; see $LOG/$proxy.log"
    p1=$(cpu_ms "$pid") o1=$(cpu_ms "$ORIGIN_PID") b1=$(origin_bytes "$OPORT") c1=$(tcp_counters)
    wait "$attack" || die "hostile.py $traffic failed: $(tail -n 3 "$LOG/$proxy-$traffic.err")"
    stop_pids "$pid"
    read -r r0 q0 <<<"$c0"
    read -r r1 q1 <<<"$c1"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$proxy" "$traffic" "$(awk "BEGIN {print $p1 - $p0}")" \
        "$(awk "BEGIN {print $o1 - $o0}")" "$((b1 - b0))" "$((r1 - r0))" "$((q1 - q0))" >>"$ROWS"
}

echo "# bench/proxy-upload.sh ${PROXIES[*]} on $(date -u '+%Y-%m-%d %H:%M UTC'): HALF=$HALF WINDOW=${WINDOW}s REPEATS=$REPEATS; logs in $LOG"
for _ in $(seq "$REPEATS"); do
    for p in ${PROXIES[@]+"${PROXIES[@]}"}; do
        [[ -n $p ]] || continue
        for t in halfopen relay; do one "$p" "$t"; done
    done
done
python3 - "$ROWS" "$WINDOW" <<'EOF'
import statistics, sys
rows, window = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()], float(sys.argv[2])
print()
print("| proxy | traffic | proxy CPU, ms | origin CPU, ms | MiB to the origin | proxy CPU per MiB, ms | TCP retransmits | receive-queue prunes |")
print("|---|---|---|---|---|---|---|---|")
med, per = {}, {}
for r in rows:
    proxy, traffic, pcpu, ocpu, b, retr, prune = r[0], r[1], float(r[2]), float(r[3]), int(r[4]), int(r[5]), int(r[6])
    mib = b / 1048576
    print("| %s | %s | %.0f | %.0f | %.1f | %s | %d | %d |" % (proxy, traffic, pcpu, ocpu, mib,
          "%.2f" % (pcpu / mib) if mib else "-", retr, prune))
    med.setdefault((proxy, traffic), []).append(pcpu)
    if mib:
        per.setdefault((proxy, traffic), []).append(pcpu / mib)
print()
print("Over %.0f s of each (medians): the proxy's CPU under halfopen against relay (the same upload, read):" % window)
for proxy in dict.fromkeys(p for p, _ in med):
    h, r = med.get((proxy, "halfopen")), med.get((proxy, "relay"))
    if h and r:
        h, r = statistics.median(h), statistics.median(r)
        print("  %s: %.0f ms against %.0f ms (%.2f)" % (proxy, h, r, h / r if r else float("nan")))
ref = per.get(("microsocks", "relay"))
if ref:
    ref = statistics.median(ref)
    print("The proxy's CPU per MiB of the upload read (relay) against microsocks' (%.1f ms), medians:" % ref)
    for proxy in dict.fromkeys(p for p, _ in per):
        if proxy != "microsocks" and per.get((proxy, "relay")):
            m = statistics.median(per[(proxy, "relay")])
            print("  %s: %.1f ms (%.2f)" % (proxy, m, m / ref))
EOF
