#!/usr/bin/env bash
# wirebench vs. reference peers (sockperf, iperf3) on loopback (127.0.0.1 only).
#
#   bench/loopback.sh [--quick] [--peers-only] [--help]
#
# Comparisons (each repeated REPEATS times, peer and wirebench alternating,
# median of each side reported):
#   1. ping-pong latency, 64 B on the wire: sockperf ping-pong --full-rtt
#      vs. wirebench pingpong --payload 43 (43 + 21-byte header = 64 B).
#      ratio = wirebench p50 / sockperf p50            target <= 1.05
#   2. one-way stream, 128 KiB writes: iperf3 -l 128K
#      vs. wirebench stream oneway --payload 128KiB.
#      ratio = wirebench bit/s / iperf3 bit/s          target >= 0.95
#   3. 100-byte messages: sockperf throughput -m 100
#      vs. wirebench stream oneway --payload 79 --nodelay off (79 + 21 = 100 B).
#      sockperf's throughput mode leaves Nagle on, so wirebench runs with
#      TCP_NODELAY off too: both let the kernel coalesce small writes.
#      ratio = wirebench msg/s / sockperf msg/s        target >= 0.95 (issue #33)
#      (iperf3 -l 100 printed for reference only)
#
# Environment (all optional):
#   WB                path to the wirebench binary (default $REPO/target/release/wirebench;
#                     built with `cargo build --release -p wirebench` if missing)
#   WB_EXTRA          extra arguments appended to every `wirebench run` (word-split)
#   SECONDS_PER_TEST  duration of each sockperf/iperf3 run (default 10, --quick: 2)
#   REPEATS           repetitions of each comparison (default 3, --quick: 1)
#   ROUNDS            wirebench ping-pong rounds   (default SECONDS_PER_TEST * 12000, ~70 us RTT)
#   COUNT_LARGE       wirebench 128 KiB messages   (default: none, the stream sends for
#                     SECONDS_PER_TEST, as long as iperf3 does)
#   COUNT_SMALL       wirebench 100 B messages     (default: none, the stream sends for
#                     SECONDS_PER_TEST, as long as sockperf does)
#   LOG_DIR           where raw outputs are kept   (default: a new /tmp/wirebench-loopback.XXXXXX)
#
# Exit status: 0 when everything ran (even if a target is missed); non-zero on errors.

# Functions below are called indirectly (trap, run_pair), which SC2317 cannot see.
# shellcheck disable=SC2317
set -euo pipefail

HOST=127.0.0.1
HEADER_BYTES=21

usage() { sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0"; }

QUICK=0
PEERS_ONLY=0
while (($#)); do
    case "$1" in
        --quick) QUICK=1 ;;
        --peers-only) PEERS_ONLY=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "loopback.sh: unknown argument: $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done

if ((QUICK)); then
    SECONDS_PER_TEST=${SECONDS_PER_TEST:-2}
    REPEATS=${REPEATS:-1}
else
    SECONDS_PER_TEST=${SECONDS_PER_TEST:-10}
    REPEATS=${REPEATS:-3}
fi
ROUNDS=${ROUNDS:-$((SECONDS_PER_TEST * 12000))}
# The streams send for as long as the peers do (a fixed count made wirebench's 100 B run
# a third as long as sockperf's, start-up included), unless a count is given.
COUNT_LARGE=${COUNT_LARGE:-}
COUNT_SMALL=${COUNT_SMALL:-}
LARGE_ARGS=(--duration "${SECONDS_PER_TEST}s")
[[ -n $COUNT_LARGE ]] && LARGE_ARGS=(--count "$COUNT_LARGE")
SMALL_ARGS=(--duration "${SECONDS_PER_TEST}s")
[[ -n $COUNT_SMALL ]] && SMALL_ARGS=(--count "$COUNT_SMALL")

for v in SECONDS_PER_TEST REPEATS ROUNDS ${COUNT_LARGE:+COUNT_LARGE} ${COUNT_SMALL:+COUNT_SMALL}; do
    if ! [[ ${!v} =~ ^[1-9][0-9]*$ ]]; then
        echo "loopback.sh: $v must be a positive integer (got '${!v}')" >&2
        exit 2
    fi
done

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG_DIR=${LOG_DIR:-$(mktemp -d /tmp/wirebench-loopback.XXXXXX)}
mkdir -p "$LOG_DIR"

die() { echo "loopback.sh: error: $*" >&2; exit 1; }
log() { printf '%s\n' "$*"; }
show_cmd() { printf '  $'; printf ' %q' "$@"; printf '\n'; }

# ---------------------------------------------------------------- cleanup
BG_PIDS=()  # background servers
FG_PID=      # the client currently measured (run in background + wait, so signals act at once)
cleanup() {
    local pid
    for pid in ${FG_PID:+"$FG_PID"} "${BG_PIDS[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# run_fg STDOUT STDERR CMD...: run CMD as the measured foreground client
run_fg() {
    local out=$1 err=$2 rc=0
    shift 2
    if [[ $out == "$err" ]]; then "$@" >"$out" 2>&1 & else "$@" >"$out" 2>"$err" & fi
    FG_PID=$!
    wait "$FG_PID" || rc=$?
    FG_PID=
    return "$rc"
}

# ---------------------------------------------------------------- tools
ensure_tools() {
    local missing=() t
    for t in sockperf iperf3 jq; do
        command -v "$t" >/dev/null 2>&1 || missing+=("$t")
    done
    ((${#missing[@]} == 0)) && return 0
    log "installing: ${missing[*]}"
    local sudo=()
    if ((EUID != 0)); then
        command -v sudo >/dev/null 2>&1 || die "need root or sudo to install ${missing[*]}"
        sudo=(sudo)
    fi
    command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install ${missing[*]} by hand"
    "${sudo[@]}" apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get -o DPkg::Lock::Timeout=600 install -y sockperf iperf3 jq
    for t in sockperf iperf3 jq; do
        command -v "$t" >/dev/null 2>&1 || die "$t still missing after install"
    done
}

ensure_wirebench() {
    if [[ -n ${WB:-} ]]; then
        [[ -x $WB ]] || die "WB=$WB is not an executable file"
        return 0
    fi
    WB=$REPO/target/release/wirebench
    if [[ ! -x $WB ]]; then
        log "building wirebench:"
        show_cmd cargo build --release -p wirebench
        (cd "$REPO" && cargo build --release -p wirebench) || die "cargo build failed"
        [[ -x $WB ]] || die "build finished but $WB is missing"
    fi
}

# ---------------------------------------------------------------- ports
# Loopback ports in use (any state, incl. TIME_WAIT: sockperf's server does not
# set SO_REUSEADDR, so a port with TIME_WAIT leftovers cannot be bound).
PICKED_PORTS=" "
port_in_use() {
    local hex
    hex=$(printf '%04X' "$1")
    awk -v p=":$hex" 'NR > 1 && substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' \
        /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
free_port() {
    local p i
    for ((i = 0; i < 200; i++)); do
        p=$((20000 + RANDOM % 40000))
        [[ $PICKED_PORTS == *" $p "* ]] && continue
        port_in_use "$p" && continue
        PICKED_PORTS+="$p "
        echo "$p"
        return 0
    done
    die "could not find a free port"
}
# wait_listen PID PORT: until 127.0.0.1:PORT is in LISTEN state, or PID dies.
wait_listen() {
    local pid=$1 hex i
    hex=$(printf '0100007F:%04X' "$2")
    for ((i = 0; i < 200; i++)); do
        kill -0 "$pid" 2>/dev/null || return 1
        if awk -v a="$hex" 'NR > 1 && $2 == a && $4 == "0A" { found = 1 } END { exit !found }' /proc/net/tcp; then
            return 0
        fi
        sleep 0.05
    done
    return 1
}

# ---------------------------------------------------------------- numbers
median() { # values as args
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) exit 1
        if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
calc() { awk "BEGIN { printf \"%.10g\", $1 }" </dev/null; } # calc 'expr' -> number
fmt() { awk -v x="$2" "BEGIN { printf \"$1\", x }" </dev/null; }
verdict() { # verdict RATIO OP TARGET
    if awk -v r="$1" -v t="$3" -v op="$2" 'BEGIN { exit !(op == "<=" ? r <= t : r >= t) }'; then
        echo PASS
    else
        echo MISS
    fi
}
strip_ansi() { sed 's/\x1b\[[0-9;]*m//g'; }

# ---------------------------------------------------------------- peers
SOCKPERF_PORT=
SOCKPERF_PID=
start_sockperf_server() {
    SOCKPERF_PORT=$(free_port)
    local cmd=(sockperf server --tcp -i "$HOST" -p "$SOCKPERF_PORT")
    log "sockperf server (background, kept for all sockperf runs):"
    show_cmd "${cmd[@]}"
    "${cmd[@]}" >"$LOG_DIR/sockperf-server.log" 2>&1 &
    SOCKPERF_PID=$!
    BG_PIDS+=("$SOCKPERF_PID")
    wait_listen "$SOCKPERF_PID" "$SOCKPERF_PORT" ||
        die "sockperf server did not start; see $LOG_DIR/sockperf-server.log:
$(cat "$LOG_DIR/sockperf-server.log")"
}
check_sockperf_server() {
    kill -0 "$SOCKPERF_PID" 2>/dev/null || die "sockperf server (pid $SOCKPERF_PID) died; see $LOG_DIR/sockperf-server.log"
}

# sets PP_P50 PP_P99 (microseconds, full round trip)
sockperf_pingpong() {
    local out=$LOG_DIR/sockperf-pingpong-$1.log
    check_sockperf_server
    run_fg "$out" "$out" sockperf ping-pong --tcp -i "$HOST" -p "$SOCKPERF_PORT" -m 64 -t "$SECONDS_PER_TEST" --full-rtt ||
        die "sockperf ping-pong failed; see $out"
    local clean
    clean=$(strip_ansi <"$out")
    # --full-rtt makes sockperf say "Round trip"; without it, it prints half the RTT as "Latency".
    grep -q 'Summary: Round trip is' <<<"$clean" || die "sockperf did not report full RTT; see $out"
    PP_P50=$(awk '/---> percentile 50\.000 =/ { print $NF }' <<<"$clean")
    PP_P99=$(awk '/---> percentile 99\.000 =/ { print $NF }' <<<"$clean")
    [[ -n $PP_P50 && -n $PP_P99 ]] || die "could not parse sockperf percentiles; see $out"
}

# sets TP_RATE (msg/s)
sockperf_throughput() {
    local out=$LOG_DIR/sockperf-throughput-$1.log
    check_sockperf_server
    run_fg "$out" "$out" sockperf throughput --tcp -i "$HOST" -p "$SOCKPERF_PORT" -m 100 -t "$SECONDS_PER_TEST" ||
        die "sockperf throughput failed; see $out"
    TP_RATE=$(strip_ansi <"$out" | sed -n 's/.*Summary: Message Rate is \([0-9.]*\) \[msg\/sec\].*/\1/p')
    [[ -n $TP_RATE ]] || die "could not parse sockperf message rate; see $out"
}

# iperf3_run LEN TAG: sets IPERF_BPS (receiver bit/s)
iperf3_run() {
    local len=$1 tag=$2 port pid
    local out=$LOG_DIR/iperf3-$tag.json
    port=$(free_port)
    iperf3 -s -1 -B "$HOST" -p "$port" >"$LOG_DIR/iperf3-server-$tag.log" 2>&1 &
    pid=$!
    BG_PIDS+=("$pid")
    wait_listen "$pid" "$port" || die "iperf3 server did not start; see $LOG_DIR/iperf3-server-$tag.log"
    run_fg "$out" "$out" iperf3 -c "$HOST" -p "$port" -l "$len" -t "$SECONDS_PER_TEST" -J ||
        die "iperf3 client failed: $(jq -r '.error // empty' "$out" 2>/dev/null || true); see $out"
    # the -1 server exits on its own after one test; give it a moment, then make sure
    local i=0
    while ((i++ < 40)) && kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    IPERF_BPS=$(jq -er '.end.sum_received.bits_per_second' "$out") ||
        die "could not parse iperf3 .end.sum_received.bits_per_second; see $out"
}

# ---------------------------------------------------------------- wirebench
# wb_run TAG ARGS...: runs `$WB run --json ARGS`, leaves the last record in WB_REC
wb_run() {
    local tag=$1
    shift
    local out=$LOG_DIR/wirebench-$tag.jsonl
    run_fg "$out" "$LOG_DIR/wirebench-$tag.err" "$WB" run --json --quiet --out "$LOG_DIR/wirebench-$tag" "$@" "${WB_EXTRA_ARR[@]}" ||
        die "wirebench failed; see $out and $LOG_DIR/wirebench-$tag.err"
    WB_REC=$(jq -Rc 'fromjson? | select(type == "object" and has("metrics"))' "$out" | tail -n 1)
    [[ -n $WB_REC ]] || die "no JSON record with metrics in wirebench output; see $out"
    local status
    status=$(jq -r '.status // "ok"' <<<"$WB_REC")
    [[ $status == ok ]] || die "wirebench case status '$status': $(jq -r '.error // ""' <<<"$WB_REC"); see $out"
}
# wb_metric NAME UNIT: prints the value of metric NAME, checking its unit
wb_metric() {
    jq -er --arg n "$1" --arg u "$2" '
        .metrics[$n] as $m
        | if $m == null then error("metric \($n) missing")
          elif ($m.unit // $u) != $u then error("metric \($n) has unit \($m.unit), expected \($u)")
          else $m.value end' <<<"$WB_REC" || die "bad wirebench record: $WB_REC"
}

# ---------------------------------------------------------------- main
ensure_tools
((PEERS_ONLY)) || ensure_wirebench
WB_EXTRA_ARR=()
if [[ -n ${WB_EXTRA:-} ]]; then read -ra WB_EXTRA_ARR <<<"$WB_EXTRA"; fi

log "== wirebench loopback comparison ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -sr), $(nproc) cpus)"
log "sockperf: $(sockperf --version 2>&1 | strip_ansi | grep -m1 -o 'version [^ ]*' || echo unknown)"
log "iperf3:   $(iperf3 --version 2>&1 | head -n 1)"
if ((PEERS_ONLY)); then
    log "wirebench: skipped (--peers-only)"
else
    log "wirebench: $WB ($("$WB" --version 2>/dev/null | head -n 1 || echo 'version unknown'))"
fi
log "SECONDS_PER_TEST=$SECONDS_PER_TEST REPEATS=$REPEATS ROUNDS=$ROUNDS COUNT_LARGE=${COUNT_LARGE:-none} COUNT_SMALL=${COUNT_SMALL:-none}"
log "raw outputs: $LOG_DIR"
log ""

start_sockperf_server
wbcmd() { show_cmd "$WB" run --json "$@" "${WB_EXTRA_ARR[@]}"; }
log "commands:"
show_cmd sockperf ping-pong --tcp -i "$HOST" -p "$SOCKPERF_PORT" -m 64 -t "$SECONDS_PER_TEST" --full-rtt
((PEERS_ONLY)) || wbcmd --workload pingpong --payload $((64 - HEADER_BYTES)) --rounds "$ROUNDS"
show_cmd iperf3 -s -1 -B "$HOST" -p PORT
show_cmd iperf3 -c "$HOST" -p PORT -l 128K -t "$SECONDS_PER_TEST" -J
((PEERS_ONLY)) || wbcmd --workload stream --mode oneway --payload 128KiB "${LARGE_ARGS[@]}"
show_cmd sockperf throughput --tcp -i "$HOST" -p "$SOCKPERF_PORT" -m 100 -t "$SECONDS_PER_TEST"
((PEERS_ONLY)) || wbcmd --workload stream --mode oneway --payload $((100 - HEADER_BYTES)) "${SMALL_ARGS[@]}" --nodelay off
show_cmd iperf3 -c "$HOST" -p PORT -l 100 -t "$SECONDS_PER_TEST" -J
log ""

SP_P50=() SP_P99=() WB_P50=() WB_P99=()
IP_BIG=() WB_BIG=() SP_RATE=() WB_RATE=() WB_SMALL_BPS=() IP_SMALL=()

# Alternate the order (peer first on odd repeats, wirebench first on even ones)
# so slow drift does not favour one side.
run_pair() { # run_pair REPEAT PEER_FN WB_FN
    if (($1 % 2)); then "$2" "$1"; "$3" "$1"; else "$3" "$1"; "$2" "$1"; fi
}

# 1. ping-pong 64 B
pp_peer() {
    sockperf_pingpong "$1"
    SP_P50+=("$PP_P50") SP_P99+=("$PP_P99")
    log "  [$1] sockperf   p50 $(fmt %.1f "$PP_P50") us  p99 $(fmt %.1f "$PP_P99") us"
}
pp_wb() {
    ((PEERS_ONLY)) && return 0
    wb_run "pingpong-$1" --workload pingpong --payload $((64 - HEADER_BYTES)) --rounds "$ROUNDS"
    local p50 p99
    p50=$(wb_metric rtt.p50 s)
    p99=$(wb_metric rtt.p99 s)
    p50=$(calc "$p50 * 1e6")
    p99=$(calc "$p99 * 1e6")
    WB_P50+=("$p50") WB_P99+=("$p99")
    log "  [$1] wirebench  p50 $(fmt %.1f "$p50") us  p99 $(fmt %.1f "$p99") us"
}
log "-- 1. ping-pong, 64 B on the wire, full round trip"
for ((r = 1; r <= REPEATS; r++)); do run_pair "$r" pp_peer pp_wb; done

# 2. stream 128 KiB
big_peer() {
    iperf3_run 128K "128K-$1"
    IP_BIG+=("$IPERF_BPS")
    log "  [$1] iperf3     $(fmt %.2f "$(calc "$IPERF_BPS / 1e9")") Gbit/s"
}
big_wb() {
    ((PEERS_ONLY)) && return 0
    wb_run "stream128k-$1" --workload stream --mode oneway --payload 128KiB "${LARGE_ARGS[@]}"
    local bps
    bps=$(wb_metric throughput.bits_per_s bit/s)
    WB_BIG+=("$bps")
    log "  [$1] wirebench  $(fmt %.2f "$(calc "$bps / 1e9")") Gbit/s"
}
log "-- 2. one-way stream, 128 KiB writes"
for ((r = 1; r <= REPEATS; r++)); do run_pair "$r" big_peer big_wb; done

# 3. 100 B messages
small_peer() {
    sockperf_throughput "$1"
    SP_RATE+=("$TP_RATE")
    log "  [$1] sockperf   $(fmt %.0f "$TP_RATE") msg/s"
}
small_wb() {
    ((PEERS_ONLY)) && return 0
    wb_run "stream100-$1" --workload stream --mode oneway --payload $((100 - HEADER_BYTES)) "${SMALL_ARGS[@]}" --nodelay off
    local mps bps
    mps=$(wb_metric throughput.messages_per_s msg/s)
    bps=$(wb_metric throughput.bits_per_s bit/s)
    WB_RATE+=("$mps") WB_SMALL_BPS+=("$bps")
    log "  [$1] wirebench  $(fmt %.0f "$mps") msg/s  $(fmt %.3f "$(calc "$bps / 1e9")") Gbit/s"
}
log "-- 3. 100 B messages, one way"
for ((r = 1; r <= REPEATS; r++)); do run_pair "$r" small_peer small_wb; done
for ((r = 1; r <= REPEATS; r++)); do
    iperf3_run 100 "100-$r"
    IP_SMALL+=("$IPERF_BPS")
    log "  [$r] iperf3 -l 100 (reference)  $(fmt %.3f "$(calc "$IPERF_BPS / 1e9")") Gbit/s  ($(fmt %.0f "$(calc "$IPERF_BPS / 800")") writes/s)"
done

# ---------------------------------------------------------------- summary
list() { # list FORMAT SCALE VALUES...: "[a b c]"
    local f=$1 s=$2 out="" v
    shift 2
    for v in "$@"; do out+="$(fmt "$f" "$(calc "$v * $s")") "; done
    echo "[${out% }]"
}
m_sp50=$(median "${SP_P50[@]}")
m_sp99=$(median "${SP_P99[@]}")
m_ipbig=$(median "${IP_BIG[@]}")
m_sprate=$(median "${SP_RATE[@]}")
m_ipsmall=$(median "${IP_SMALL[@]}")

log ""
log "== summary (median of $REPEATS; per-repeat values in brackets)"
log "  sockperf  64B RTT p50 $(fmt %.1f "$m_sp50") us $(list %.1f 1 "${SP_P50[@]}")  p99 $(fmt %.1f "$m_sp99") us $(list %.1f 1 "${SP_P99[@]}")"
if ((!PEERS_ONLY)); then
    m_wb50=$(median "${WB_P50[@]}")
    m_wb99=$(median "${WB_P99[@]}")
    log "  wirebench 64B RTT p50 $(fmt %.1f "$m_wb50") us $(list %.1f 1 "${WB_P50[@]}")  p99 $(fmt %.1f "$m_wb99") us $(list %.1f 1 "${WB_P99[@]}")"
fi
log "  iperf3    128K  $(fmt %.2f "$(calc "$m_ipbig / 1e9")") Gbit/s $(list %.2f 1e-9 "${IP_BIG[@]}")"
((PEERS_ONLY)) || log "  wirebench 128K  $(fmt %.2f "$(calc "$(median "${WB_BIG[@]}") / 1e9")") Gbit/s $(list %.2f 1e-9 "${WB_BIG[@]}")"
log "  sockperf  100B  $(fmt %.0f "$m_sprate") msg/s $(list %.0f 1 "${SP_RATE[@]}")"
((PEERS_ONLY)) || log "  wirebench 100B  $(fmt %.0f "$(median "${WB_RATE[@]}")") msg/s $(list %.0f 1 "${WB_RATE[@]}"), $(fmt %.3f "$(calc "$(median "${WB_SMALL_BPS[@]}") / 1e9")") Gbit/s"
log "  iperf3    -l 100  $(fmt %.3f "$(calc "$m_ipsmall / 1e9")") Gbit/s $(list %.3f 1e-9 "${IP_SMALL[@]}") (reference)"
log ""

if ((PEERS_ONLY)); then
    log "(--peers-only: no ratios)"
    exit 0
fi

m_wbbig=$(median "${WB_BIG[@]}")
m_wbrate=$(median "${WB_RATE[@]}")
r1=$(calc "$m_wb50 / $m_sp50")
r2=$(calc "$m_wbbig / $m_ipbig")
r3=$(calc "$m_wbrate / $m_sprate")
log "== ratios"
log "  pingpong 64B p50: wirebench $(fmt %.1f "$m_wb50") us, sockperf $(fmt %.1f "$m_sp50") us, ratio $(fmt %.2f "$r1") (target <= 1.05) $(verdict "$r1" '<=' 1.05)"
log "  stream 128KiB: wirebench $(fmt %.2f "$(calc "$m_wbbig / 1e9")") Gbit/s, iperf3 $(fmt %.2f "$(calc "$m_ipbig / 1e9")") Gbit/s, ratio $(fmt %.2f "$r2") (target >= 0.95) $(verdict "$r2" '>=' 0.95)"
log "  messages 100B: wirebench $(fmt %.0f "$m_wbrate") msg/s, sockperf $(fmt %.0f "$m_sprate") msg/s, ratio $(fmt %.2f "$r3") (target >= 0.95) $(verdict "$r3" '>=' 0.95)"
exit 0
