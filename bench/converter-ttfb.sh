#!/usr/bin/env bash
# Our RFC 8803 converter against direct TCP, both with TCP Fast Open, over study S3's
# population of paths (link.paths = s3), in the same run.
#
#   bench/converter-ttfb.sh [--quick] [--help]
#
# #17's target: the converter's TTFB is direct TCP's to the same server plus the
# converter's own leg to the server, and no extra round trip on the client's path:
#
#   ratio = convert ttfb.p50 / (direct ttfb.p50 + convert.leg.p50)     target <= 1.02
#
# convert.leg is measured by the converter itself, per connection: from the start of its
# connection onwards (with Fast Open, the client's data in its SYN) to the server's first
# byte back. Connection k of both variants crosses the same path (same source port), so
# the two distributions differ by the protocol alone. REPEATS runs, alternating which
# variant goes first; the medians of the per-run figures are printed with each run's.
#
# Needs root (the lab). Environment (all optional):
#   WB        wirebench binary (default $REPO/target/release/wirebench; built if missing)
#   CONNECTS  connections per case (default 5000, the scenario's; --quick: 1000)
#   REPEATS   runs (default 3; --quick: 1)
#   LOG_DIR   raw outputs (default: a new /tmp/wirebench-converter.XXXXXX)
#
# Exit status: 0 when everything ran (a missed target is reported, not an error).

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
        echo "converter-ttfb.sh: unknown argument: $a (try --help)" >&2
        exit 2
        ;;
    esac
done
if ((QUICK)); then
    : "${REPEATS:=1}" "${CONNECTS:=1000}"
fi
REPEATS=${REPEATS:-3}
CONNECTS=${CONNECTS:-5000}
for v in REPEATS CONNECTS; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || {
        echo "converter-ttfb.sh: $v must be a positive integer (got '${!v}')" >&2
        exit 2
    }
done

die() {
    echo "converter-ttfb.sh: error: $*" >&2
    exit 1
}
log() { printf '%s\n' "$*"; }
show_cmd() {
    printf '  $'
    printf ' %q' "$@"
    printf '\n'
}

((EUID == 0)) || die "the lab needs root"
command -v python3 >/dev/null || die "python3 is missing"
LOG_DIR=${LOG_DIR:-$(mktemp -d /tmp/wirebench-converter.XXXXXX)}
mkdir -p "$LOG_DIR"
LOG_DIR=$(cd "$LOG_DIR" && pwd)

WB=${WB:-$REPO/target/release/wirebench}
if [[ ! -x $WB ]]; then
    log "building wirebench:"
    show_cmd cargo build --release -p wirebench
    (cd "$REPO" && cargo build --release -p wirebench) || die "cargo build failed"
fi

log "== converter vs direct TCP, TCP Fast Open, S3 paths ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -sr), $(nproc) cpus)"
log "wirebench: $WB ($("$WB" --version 2>/dev/null | head -n 1))"
log "logs: $LOG_DIR"
for i in $(seq "$REPEATS"); do
    order=direct,convert
    ((i % 2 == 0)) && order=convert,direct
    cmd=("$WB" run --protocol "$order" --tfo on --workload connect --payload 64
        --connects "$CONNECTS" --concurrency 50 --link-paths s3
        --out "$LOG_DIR/run-$i" --no-report --quiet)
    show_cmd "${cmd[@]}"
    "${cmd[@]}" >"$LOG_DIR/run-$i.log" 2>&1 || die "run $i failed: $LOG_DIR/run-$i.log"
done

log ""
python3 - "$LOG_DIR" "$REPEATS" <<'PY'
import json, statistics, sys
d, n = sys.argv[1], int(sys.argv[2])
rows = []
for i in range(1, n + 1):
    m = {}
    for line in open(f"{d}/run-{i}/results.jsonl"):
        r = json.loads(line)
        if r.get("status") != "ok":
            sys.exit(f"run {i}: a case failed: {r.get('error')}")
        m[r["params"]["protocol"]] = {k: v["value"] for k, v in r["metrics"].items()}
    dt, ct, leg = m["direct"]["ttfb.p50"], m["convert"]["ttfb.p50"], m["convert"]["convert.leg.p50"]
    rows.append((dt, ct, leg, ct / (dt + leg), ct / dt,
                 m["convert"].get("convert.onward_tfo", 0), m["convert"]["connects.ok"]))
print("| run | direct TTFB p50 | convert TTFB p50 | convert.leg p50 | convert / (direct + leg) | convert / direct | SYN data onwards |")
print("|---|---:|---:|---:|---:|---:|---:|")
for i, (dt, ct, leg, r, rd, tfo, ok) in enumerate(rows, 1):
    print(f"| {i} | {dt*1e3:.3f} ms | {ct*1e3:.3f} ms | {leg*1e3:.3f} ms | {r:.3f} | {rd:.3f} | {tfo:.0f} of {ok:.0f} |")
med = lambda k: statistics.median(x[k] for x in rows)
print(f"| median | {med(0)*1e3:.3f} ms | {med(1)*1e3:.3f} ms | {med(2)*1e3:.3f} ms | {med(3):.3f} (target <= 1.02) | {med(4):.3f} | |")
PY
