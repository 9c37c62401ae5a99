#!/usr/bin/env bash
# Study S5 (Soap-Stone): every protocol's stream throughput as a ratio of raw TCP's, at
# every payload, one-way and echo, from ONE wirebench run (loopback, 127.0.0.1 only).
#
#   bench/soapstone.sh [--quick] [--help]
#
# Runs the built-in scenario (6 protocols x 2 modes x 6 payloads, 1 s streams, 72 cases)
# three times over (1 s streams on this noisy 2-core VM spread by 2x; docs/performance.md,
# "Stream duration"), about 4.5 minutes here:
#   wirebench run soapstone --out DIR --no-report --quiet --repeat 3
# or, with --quick (one repeat of 3 payloads, 0.5 s streams: 36 cases, ~30 s) or any of
# PROTOCOLS/PAYLOADS/MODES/DURATION/REPEAT set, the same scenario with those parameters
# overridden on the command line (raw is always added: every ratio's denominator comes
# from the same run). Then prints, from
# DIR/results.jsonl, per mode:
#   - raw's throughput (payload bits per second) at each payload,
#   - a table protocol x payload of throughput.bits_per_s / raw's at that payload and mode,
#   - the absolute figures of every protocol (with repeats: ±half their range, in % of
#     the median).
# With REPEAT > 1 each cell is the median of the repeats, and the ratio is the median
# protocol's over the median raw's. Tables are Markdown, to paste
# into docs/performance.md. A failed case shows as "fail" (the run's exit status is 1
# then; the tables are still printed).
#
# Environment (all optional):
#   WB         wirebench binary (default $REPO/target/release/wirebench; built with
#              `cargo build --release -p wirebench` if missing)
#   OUT        results directory (default: a new /tmp/wirebench-soapstone.XXXXXX)
#   RESULTS    tabulate this existing results directory instead of running anything
#   PROTOCOLS  e.g. raw,http,grpc      (default: the scenario's raw,http,soap,rmi,grpc,websocket)
#   PAYLOADS   e.g. 100,10000,1000000  (default: the scenario's 100,1000,1500,10000,100000,1000000;
#              --quick: 100,10000,1000000)
#   MODES      oneway,echo             (default: both)
#   DURATION   stream length per case  (default: the scenario's 1s; --quick: 0.5s)
#   REPEAT     repeats of every case   (default 3; --quick: 1)
#   RUN_LIMIT  seconds before the whole run is stopped (default 540; the records of the
#              cases finished by then are kept and tabulated)
#
# Exit status: 0 when every case ran; 1 when a case failed or the run was stopped; 2 on
# bad input.

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
        echo "soapstone.sh: unknown argument: $a (try --help)" >&2
        exit 2
        ;;
    esac
done

die() {
    echo "soapstone.sh: error: $*" >&2
    exit 1
}
log() { printf '%s\n' "$*"; }
show_cmd() {
    printf '  $'
    printf ' %q' "$@"
    printf '\n'
}

command -v python3 >/dev/null || die "python3 is missing"

if ((QUICK)); then
    : "${PAYLOADS:=100,10000,1000000}" "${DURATION:=0.5s}" "${REPEAT:=1}"
fi
REPEAT=${REPEAT:-3}
RUN_LIMIT=${RUN_LIMIT:-540}
for v in REPEAT RUN_LIMIT; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || {
        echo "soapstone.sh: $v must be a positive integer (got '${!v}')" >&2
        exit 2
    }
done

# ---------------------------------------------------------------- run
RC=0
if [[ -n ${RESULTS:-} ]]; then
    OUT=$RESULTS
    [[ -f $OUT/results.jsonl ]] || die "RESULTS=$OUT has no results.jsonl"
    log "== tabulating $OUT/results.jsonl (no run)"
else
    WB=${WB:-$REPO/target/release/wirebench}
    if [[ ! -x $WB ]]; then
        log "building wirebench:"
        show_cmd cargo build --release -p wirebench
        (cd "$REPO" && cargo build --release -p wirebench) || die "cargo build failed"
        [[ -x $WB ]] || die "build finished but $WB is missing"
    fi
    OUT=${OUT:-$(mktemp -d /tmp/wirebench-soapstone.XXXXXX)}
    mkdir -p "$OUT"
    [[ ! -s $OUT/results.jsonl ]] || die "OUT=$OUT already holds results.jsonl; give an empty directory"

    cmd=("$WB" run soapstone --out "$OUT" --no-report --quiet)
    if [[ -n ${PROTOCOLS:-} ]]; then
        # raw is every ratio's denominator: always in the run
        [[ ,$PROTOCOLS, == *,raw,* ]] || PROTOCOLS=raw,$PROTOCOLS
        cmd+=(--protocol "$PROTOCOLS")
    fi
    [[ -z ${PAYLOADS:-} ]] || cmd+=(--payload "$PAYLOADS")
    [[ -z ${MODES:-} ]] || cmd+=(--mode "$MODES")
    [[ -z ${DURATION:-} ]] || cmd+=(--duration "$DURATION")
    ((REPEAT == 1)) || cmd+=(--repeat "$REPEAT")

    log "== wirebench S5 (soapstone) against raw ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -sr), $(nproc) cpus)"
    log "wirebench: $WB ($("$WB" --version 2>/dev/null | head -n 1 || echo 'version unknown'))"
    log "results: $OUT"
    log "command:"
    show_cmd "${cmd[@]}"
    "${cmd[@]}" --dry-run 2>&1 | tail -n 1 || die "the scenario does not parse (see the dry run above)"

    # The run goes in the background so that Ctrl-C, and the time limit, stop it at once;
    # its finished cases stay in results.jsonl (synced as each case ends).
    WB_PID=
    cleanup() {
        if [[ -n $WB_PID ]] && kill -0 "$WB_PID" 2>/dev/null; then
            kill -INT "$WB_PID" 2>/dev/null || true
            wait "$WB_PID" 2>/dev/null || true
        fi
    }
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    start=$SECONDS
    "${cmd[@]}" >"$OUT/run.log" 2>&1 &
    WB_PID=$!
    while kill -0 "$WB_PID" 2>/dev/null; do
        if ((SECONDS - start >= RUN_LIMIT)); then
            log "soapstone.sh: the run passed RUN_LIMIT=${RUN_LIMIT}s; stopping it (pid $WB_PID)"
            kill -INT "$WB_PID" 2>/dev/null || true
            break
        fi
        sleep 1
    done
    wait "$WB_PID" || RC=$?
    WB_PID=
    log "run took $((SECONDS - start)) s, exit status $RC (log: $OUT/run.log)"
    ((RC == 0)) || RC=1
fi
log ""

# ---------------------------------------------------------------- tables
python3 - "$OUT/results.jsonl" <<'PY' || RC=1
import json, statistics, sys
from collections import defaultdict

path = sys.argv[1]
order = ["raw", "http", "soap", "rmi", "grpc", "websocket"]
bps = defaultdict(list)    # (protocol, mode, payload) -> [bit/s of ok repeats]
failed = set()
protos, modes, payloads = set(), set(), set()
for line in open(path):
    line = line.strip()
    if not line:
        continue
    r = json.loads(line)
    p = r.get("params", {})
    if p.get("workload") != "stream":
        continue
    key = (p["protocol"], p.get("mode", "oneway"), int(p["payload"]))
    protos.add(key[0]); modes.add(key[1]); payloads.add(key[2])
    v = r.get("metrics", {}).get("throughput.bits_per_s", {}).get("value")
    if r.get("status", "ok") == "ok" and v:
        bps[key].append(float(v))
    else:
        failed.add(key)

if not protos:
    sys.exit("no stream records in " + path)
protos = sorted(protos, key=lambda x: (order.index(x) if x in order else 99, x))
payloads = sorted(payloads)
modes = [m for m in ("oneway", "echo") if m in modes] + sorted(modes - {"oneway", "echo"})

def size(n):
    for unit, f in (("MB", 1e6), ("kB", 1e3)):
        if n >= f and n % f == 0:
            return f"{n // int(f)} {unit}"
    return f"{n} B"

def rate(v):
    for unit, f in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if v >= f:
            return f"{v / f:.3g} {unit}"
    return f"{v:.3g} bit/s"

def med(key):
    return statistics.median(bps[key]) if bps.get(key) else None

def table(title, rows, fmt):
    print(title)
    print()
    print("| protocol | " + " | ".join(size(n) for n in payloads) + " |")
    print("|---" * (len(payloads) + 1) + "|")
    for pr in rows:
        cells = [fmt(pr, n) for n in payloads]
        print(f"| {pr} | " + " | ".join(cells) + " |")
    print()

def cell_abs(mode):
    def f(pr, n):
        v = med((pr, mode, n))
        if v is None:
            return "fail" if (pr, mode, n) in failed else "—"
        xs = bps[(pr, mode, n)]
        if len(xs) > 1:  # half the range of the repeats, relative to the median
            return f"{rate(v)} ±{(max(xs) - min(xs)) / 2 / v * 100:.0f}%"
        return rate(v)
    return f

def cell_ratio(mode):
    def f(pr, n):
        v, raw = med((pr, mode, n)), med(("raw", mode, n))
        if v is None:
            return "fail" if (pr, mode, n) in failed else "—"
        if raw is None:
            return "(no raw)"
        return f"{v / raw:.3f}" if v / raw < 0.1 else f"{v / raw:.2f}"
    return f

nrep = max((len(v) for v in bps.values()), default=0)
print(f"== throughput.bits_per_s (payload bits) / raw's, same run, same mode and payload"
      + (f"; median of up to {nrep} repeats" if nrep > 1 else ""))
print()
for mode in modes:
    others = [p for p in protos if p != "raw"]
    table(f"**{mode}**: ratio to raw", others, cell_ratio(mode))
for mode in modes:
    table(f"**{mode}**: throughput (payload bits per second)", protos, cell_abs(mode))
if failed:
    print("failed cases: " + ", ".join(f"{p}/{m}/{size(n)}" for p, m, n in sorted(failed)))
    sys.exit(1)
PY
exit "$RC"
