#!/usr/bin/env bash
# Our SOCKS5 proxy against microsocks (Debian), both on 127.0.0.1, in the same run.
#
#   bench/socks5.sh [--quick] [--help]
#
# 1. Single-stream throughput: iperf3 -c through each proxy (proxychains4 redirects its
#    connections), 128 KiB writes, SECONDS_PER_TEST s, REPEATS times alternating; our
#    proxy is `wirebench serve --also socks5=...` (it relays to loopback only).
#      ratio = ours / microsocks, median of each          target >= 0.9
# 2. Connection set-up: wirebench's connect workload through each proxy started per
#    case, CONNECTS connections 32 at a time (64-byte echo each), REPEATS times, ours on
#    THREADS threads (each its own SO_REUSEPORT listener and runtime; --proxy-threads):
#      wirebench run --protocol direct,socks5 --workload connect --connects N
#        --concurrency 32 --socks5-server ours,microsocks --proxy-threads 1,2 --repeat R
#    connects.per_s of each (target: ours >= 20k/s; 2 threads >= 1.8x 1 thread when
#    client and origin run elsewhere), with direct (no proxy) as the machine's ceiling:
#    client, proxy and origin share this machine's CPUs. Also each proxy's own CPU time
#    per connection (proxy.cpu_per_connection: ours from its threads' CPU clocks, all of
#    them, and per thread; microsocks from its process's) and the rate it implies for a
#    proxy with CPUs to itself.
# 3. CPU per connection against the limit: one client for every proxy (bench/lib/
#    socks5-limit.c `client`, C, one epoll loop: CONNECTS connections 32 at a time,
#    greeting, CONNECT, 64 bytes echoed by its `origin`, close), through ours (`serve
#    --also socks5=`, on each of THREADS threads), microsocks, and the limit: the same
#    program's `proxy`, a minimal SOCKS5 CONNECT relay in C (one thread, edge-triggered
#    epoll, splice(2) through pooled pipes). Each proxy's CPU time from its process's
#    clocks (/proc/PID/stat, user + system) over the run, per connection, REPEATS times
#    alternating; prints the medians and each against the limit's.
#
# Missing tools are installed when possible (Debian: iperf3, microsocks, proxychains4;
# needs root). Environment (all optional):
#   WB                wirebench binary (default $REPO/target/release/wirebench; built if missing)
#   SECONDS_PER_TEST  iperf3 run length (default 5; --quick: 2)
#   REPEATS           repeats (default 3; --quick: 1)
#   CONNECTS          connections per connect case (default 20000; --quick: 5000)
#   THREADS           our proxy's thread counts, comma-separated (default 1,2)
#   LOG_DIR           raw outputs (default: a new /tmp/wirebench-socks5.XXXXXX)
#
# Exit status: 0 when everything ran (a missed target is reported, not an error).

# shellcheck disable=SC2317  # cleanup is called through trap
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HOST=127.0.0.1

QUICK=0
for a in "$@"; do
    case $a in
    --quick) QUICK=1 ;;
    -h | --help)
        sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
        exit 0
        ;;
    *)
        echo "socks5.sh: unknown argument: $a (try --help)" >&2
        exit 2
        ;;
    esac
done
if ((QUICK)); then
    : "${SECONDS_PER_TEST:=2}" "${REPEATS:=1}" "${CONNECTS:=5000}"
fi
SECONDS_PER_TEST=${SECONDS_PER_TEST:-5}
REPEATS=${REPEATS:-3}
CONNECTS=${CONNECTS:-20000}
THREADS=${THREADS:-1,2}
[[ $THREADS =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || {
    echo "socks5.sh: THREADS must be thread counts like 1,2 (got '$THREADS')" >&2
    exit 2
}
for v in SECONDS_PER_TEST REPEATS CONNECTS; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || {
        echo "socks5.sh: $v must be a positive integer (got '${!v}')" >&2
        exit 2
    }
done

die() {
    echo "socks5.sh: error: $*" >&2
    exit 1
}
log() { printf '%s\n' "$*"; }
show_cmd() {
    printf '  $'
    printf ' %q' "$@"
    printf '\n'
}

LOG_DIR=${LOG_DIR:-$(mktemp -d /tmp/wirebench-socks5.XXXXXX)}
mkdir -p "$LOG_DIR"
LOG_DIR=$(cd "$LOG_DIR" && pwd)

missing=()
command -v iperf3 >/dev/null || missing+=(iperf3)
command -v microsocks >/dev/null || missing+=(microsocks)
command -v proxychains4 >/dev/null || missing+=(proxychains4)
if ((${#missing[@]})); then
    { ((EUID == 0)) && command -v apt-get >/dev/null; } || die "missing: ${missing[*]} (install them with apt-get)"
    log "installing ${missing[*]}:"
    show_cmd apt-get install -y "${missing[@]}"
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"; } \
        >"$LOG_DIR/install.log" 2>&1 || die "installation failed: $LOG_DIR/install.log"
fi
command -v python3 >/dev/null || die "python3 is missing"

WB=${WB:-$REPO/target/release/wirebench}
if [[ ! -x $WB ]]; then
    log "building wirebench:"
    show_cmd cargo build --release -p wirebench
    (cd "$REPO" && cargo build --release -p wirebench) || die "cargo build failed"
fi

PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do
        kill "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

log "== our SOCKS5 proxy vs microsocks ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -sr), $(nproc) cpus)"
log "wirebench: $WB ($("$WB" --version 2>/dev/null | head -n 1))"
log "microsocks: $(dpkg-query -W -f '${Version}' microsocks 2>/dev/null || echo '?'), iperf3: $(iperf3 --version | head -n 1)"
log "logs: $LOG_DIR"

# ---------------------------------------------------------------- 1. throughput
OURS=$(free_port)
MICRO=$(free_port)
IPERF=$(free_port)
"$WB" serve --listen "$HOST:0" --also "socks5=$HOST:$OURS" >"$LOG_DIR/serve.log" 2>&1 &
PIDS+=($!)
microsocks -i "$HOST" -p "$MICRO" >"$LOG_DIR/microsocks.log" 2>&1 &
PIDS+=($!)
MICRO_PID=$!
for name in ours micro; do
    port=$OURS
    [[ $name == micro ]] && port=$MICRO
    printf 'strict_chain\nquiet_mode\ntcp_read_time_out 15000\ntcp_connect_time_out 8000\n[ProxyList]\nsocks5 %s %s\n' \
        "$HOST" "$port" >"$LOG_DIR/proxychains-$name.conf"
done
sleep 1

log ""
log "== 1. one iperf3 stream through each proxy, 128 KiB writes, ${SECONDS_PER_TEST} s"
show_cmd proxychains4 -f PROXY.conf iperf3 -c "$HOST" -p "$IPERF" -t "$SECONDS_PER_TEST" -l 128K -J
: >"$LOG_DIR/throughput.txt"
for i in $(seq "$REPEATS"); do
    for name in ours micro; do
        iperf3 -s -B "$HOST" -p "$IPERF" -1 >"$LOG_DIR/iperf3-server-$name-$i.log" 2>&1 &
        srv=$!
        sleep 0.3
        out=$LOG_DIR/iperf3-$name-$i.json
        if proxychains4 -f "$LOG_DIR/proxychains-$name.conf" iperf3 -c "$HOST" -p "$IPERF" \
            -t "$SECONDS_PER_TEST" -l 128K -J >"$out" 2>"$out.err"; then
            bps=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"])' "$out")
            echo "$name $bps" >>"$LOG_DIR/throughput.txt"
            log "  repeat $i: $name $(python3 -c "print(f'{$bps / 1e9:.2f} Gbit/s')")"
        else
            log "  repeat $i: $name FAILED ($out.err)"
        fi
        kill "$srv" 2>/dev/null || true
        wait "$srv" 2>/dev/null || true
    done
done

# ---------------------------------------------------------------- 2. connections/s
log ""
log "== 2. connection set-up, $CONNECTS connections 32 at a time, ${REPEATS} repeat(s)"
cmd=("$WB" run --protocol "direct,socks5" --workload connect --connects "$CONNECTS" --concurrency 32
    --payload 64 --socks5-server "ours,microsocks" --proxy-threads "$THREADS" --repeat "$REPEATS"
    --out "$LOG_DIR/connect" --no-report --quiet)
show_cmd "${cmd[@]}"
"${cmd[@]}" >"$LOG_DIR/connect.log" 2>&1 || die "the connect run failed: $LOG_DIR/connect.log"

# ---------------------------------------------------------------- 3. CPU against the limit
log ""
log "== 3. CPU per connection, one C client for all: ours, microsocks and a minimal splice relay (the limit)"
LIMIT=$LOG_DIR/socks5-limit
cc -O2 -o "$LIMIT" "$REPO/bench/lib/socks5-limit.c" || die "cannot build bench/lib/socks5-limit.c (cc)"
ORIGIN=$(free_port)
"$LIMIT" origin "$ORIGIN" >"$LOG_DIR/origin.log" 2>&1 &
PIDS+=($!)
LIMIT_PORT=$(free_port)
"$LIMIT" proxy "$LIMIT_PORT" >"$LOG_DIR/limit-proxy.log" 2>&1 &
LIMIT_PID=$!
PIDS+=("$LIMIT_PID")
declare -A PROXY_PID PROXY_PORT
PROXY_PID[limit]=$LIMIT_PID
PROXY_PORT[limit]=$LIMIT_PORT
PROXY_PID[microsocks]=$MICRO_PID
PROXY_PORT[microsocks]=$MICRO
names=(limit microsocks)
IFS=, read -r -a thread_counts <<<"$THREADS"
for n in "${thread_counts[@]}"; do
    port=$(free_port)
    "$WB" serve --listen "$HOST:0" --also "socks5=$HOST:$port" --proxy-threads "$n" >"$LOG_DIR/serve-$n.log" 2>&1 &
    PIDS+=($!)
    PROXY_PID[ours-$n]=$!
    PROXY_PORT[ours-$n]=$port
    names+=("ours-$n")
done
sleep 1
show_cmd "$LIMIT" client PROXY_PORT "$ORIGIN" "$CONNECTS" 32
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
: >"$LOG_DIR/cpu.txt"
for i in $(seq "$REPEATS"); do
    for name in "${names[@]}"; do
        before=$(cpu_ticks "${PROXY_PID[$name]}")
        out=$("$LIMIT" client "${PROXY_PORT[$name]}" "$ORIGIN" "$CONNECTS" 32) || die "the client through $name failed: $out"
        after=$(cpu_ticks "${PROXY_PID[$name]}")
        rate=$(sed -E 's/.*: ([0-9]+) per s.*/\1/' <<<"$out")
        echo "$name $rate $((after - before))" >>"$LOG_DIR/cpu.txt"
        log "  repeat $i: $name: $out; $((after - before)) ticks of CPU"
    done
done

log ""
python3 - "$LOG_DIR/throughput.txt" "$LOG_DIR/connect/results.jsonl" <<'PY'
import json, statistics, sys
from collections import defaultdict
t = defaultdict(list)
for line in open(sys.argv[1]):
    name, bps = line.split()
    t[name].append(float(bps))
print("| measure | ours | microsocks | ratio (target) |")
print("|---|---:|---:|---:|")
if t["ours"] and t["micro"]:
    o, m = statistics.median(t["ours"]), statistics.median(t["micro"])
    print(f"| iperf3 through the proxy, Gbit/s (median of {len(t['ours'])}) | {o / 1e9:.2f} | {m / 1e9:.2f} | {o / m:.2f} (>= 0.9) |")
c = defaultdict(list)
cpu = defaultdict(list)
busiest = defaultdict(list)
for line in open(sys.argv[2]):
    r = json.loads(line)
    if r.get("status") != "ok":
        continue
    p, m = r["params"], r["metrics"]
    if p["protocol"] != "socks5":
        key = ("direct", 0)
    elif p.get("socks5.server") == "ours":
        key = ("ours", int(p.get("proxy.threads", 1)))
    else:
        # A third-party proxy runs as it runs, whatever proxy.threads says.
        key = (p.get("socks5.server"), 0)
    c[key].append(m["connects.per_s"]["value"])
    if "proxy.cpu_per_connection" in m:
        cpu[key].append(m["proxy.cpu_per_connection"]["value"])
    if "proxy.busiest_thread_cpu_per_connection" in m:
        busiest[key].append(m["proxy.busiest_thread_cpu_per_connection"]["value"])
med = statistics.median
ours = sorted(k for k in c if k[0] == "ours")
micro = ("microsocks", 0)
for k in ours:
    if c[micro]:
        o, mi = med(c[k]), med(c[micro])
        print(f"| connections/s, 32 at a time, ours on {k[1]} thread(s) (median of {len(c[k])}) | {o:,.0f} | {mi:,.0f} | {o / mi:.2f} (ours >= 20,000/s) |")
for k in ours:
    if cpu[k] and cpu[micro]:
        o, mi = med(cpu[k]) * 1e6, med(cpu[micro]) * 1e6
        print(f"| CPU per connection, us, ours on {k[1]} thread(s) (all threads) vs microsocks (its process) | {o:.1f} | {mi:.1f} | {o / mi:.2f} (lower is better) |")
if c[("direct", 0)]:
    print(f"\ndirect, no proxy (the machine's ceiling for client + origin): {med(c[('direct', 0)]):,.0f} connections/s")
for k in ours:
    if not cpu[k]:
        continue
    us = med(cpu[k]) * 1e6
    n = k[1]
    top = med(busiest[k]) * 1e6 if busiest[k] else us
    print(f"ours on {n} thread(s): {med(c[k]):,.0f} connections/s, {us:.1f} us of CPU per connection over its threads"
          f" ({top:.1f} us of it on the busiest thread), so {1e6 / top:,.0f} connections/s with a CPU per thread"
          f" (target 20,000/s)")
if len(ours) > 1 and c[ours[0]] and c[ours[-1]]:
    a, b = ours[0], ours[-1]
    print(f"{b[1]} threads against {a[1]}: {med(c[b]) / med(c[a]):.2f}x the connections/s (target >= 1.8x for 2 against 1"
          f" with client and origin elsewhere; here they share the machine's {__import__('os').cpu_count()} CPUs)")
if cpu[micro]:
    us = med(cpu[micro]) * 1e6
    print(f"microsocks: {med(c[micro]):,.0f} connections/s, {us:.1f} us of CPU per connection (its process; a thread per connection)")
PY
python3 - "$LOG_DIR/cpu.txt" "$CONNECTS" "$(getconf CLK_TCK)" <<'PY'
import statistics, sys
from collections import defaultdict
n, tck = int(sys.argv[2]), int(sys.argv[3])
rate, us = defaultdict(list), defaultdict(list)
for line in open(sys.argv[1]):
    name, r, ticks = line.split()
    rate[name].append(float(r))
    us[name].append(int(ticks) / tck / n * 1e6)
med = statistics.median
print()
print("| proxy (same C client, 32 at a time) | connections/s | CPU us per connection | against the limit |")
print("|---|---:|---:|---:|")
lim = med(us["limit"])
for name in us:
    print(f"| {name} | {med(rate[name]):,.0f} | {med(us[name]):.1f} | {med(us[name]) / lim:.2f} |")
print(f"(CPU from /proc/PID/stat at {tck} ticks a second: +-{1e6 / tck / n:.1f} us per connection;"
      f" medians of {len(us['limit'])})")
PY
