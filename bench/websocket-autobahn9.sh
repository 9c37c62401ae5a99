#!/usr/bin/env bash
# Autobahn|Testsuite's 9.* cases (performance: big messages, many fragments, chopped
# writes, round trips) against our WebSocket server and a well-known one, both on
# 127.0.0.1, in the same run (issue #32).
#
#   bash bench/websocket-autobahn9.sh [--quick] [--help]
#
# Ours: `wirebench serve --also websocket=127.0.0.1:0`, ws://ADDR/conformance (the path
# that echoes text and binary, protocols/websocket/plugin/src/lib.rs). The reference:
# gorilla/websocket's own Autobahn echo server (examples/autobahn, Go module
# github.com/gorilla/websocket, pinned below), at its path /m (reads each whole message,
# then writes it back in one call: the same shape as ours). wstest 0.8.2's fuzzingclient
# (the virtualenv of scripts/conformance/autobahn.sh) runs each case group against one
# server at a time, REPEATS rounds, alternating (ours first in odd rounds, the reference
# first in even ones). wstest times each case from the opening handshake's end to the TCP
# close, in whole ms, and checks the echo; its client (Python 2.7, Twisted) runs on the
# same CPUs, and is often the slower end. So the server's own CPU time (the run time of
# its threads, /proc/PID/task/*/schedstat) over each group's run is taken too.
#
# Prints, per case group (9.1 text, 9.2 binary, 9.3 fragmented text, 9.4 fragmented
# binary, 9.5/9.6 chopped, 9.7/9.8 round trips, and all), the median over rounds of the
# group's summed case durations and of the server's CPU time, for each server, and
# ratio = ours / reference (below 1: ours faster or cheaper). Every case's medians go to
# cases.txt in the run directory. A case that is not OK with a clean close in some round
# is listed (its time measures a failure).
#
# Environment (all optional):
#   WB          wirebench binary (default $REPO/target/release/wirebench; built if missing)
#   REPEATS     rounds (default 3; --quick: 1)
#   REF_PATH    the gorilla server's echo path (default /m; /f streams with io.Copy)
#   CONFORMANCE_DIR, PYTHON27   as for scripts/conformance/*.sh (lib.sh): the wstest
#               virtualenv and the gorilla binary are installed under CONFORMANCE_DIR
#               (default target/conformance), this run's logs and reports in
#               CONFORMANCE_DIR/websocket-autobahn9-run/
# --quick: one round of 12 cases of 1 MiB or less (9.1.1, 9.1.2, 9.2.1, 9.2.2, 9.3.8,
# 9.4.8, 9.5.6, 9.6.6, 9.7.1, 9.7.2, 9.8.1, 9.8.2), about 10 s.
#
# Needs Python 2.7 (pyenv's 2.7.18), Go, PyPI and the Go module proxy on first use.
# Exit status: 0 when every case ran OK against both (a slow one is reported, not an
# error), 1 when a case was not OK, 2 when something could not be installed or started.

set -euo pipefail

GORILLA_MODULE=github.com/gorilla/websocket
GORILLA_VERSION=v1.5.3

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
        echo "websocket-autobahn9.sh: unknown argument: $a (try --help)" >&2
        exit 2
        ;;
    esac
done
if ((QUICK)); then
    : "${REPEATS:=1}"
fi
REPEATS=${REPEATS:-3}
# One wstest run per group and server, in this order (bench/lib/autobahn9-table.py
# names them in the same order): the server's CPU time is read per group.
if ((QUICK)); then
    CASE_GROUPS=("9.1.1,9.1.2" "9.2.1,9.2.2" 9.3.8 9.4.8 "9.5.6,9.6.6" "9.7.1,9.7.2,9.8.1,9.8.2")
else
    CASE_GROUPS=('9.1.*' '9.2.*' '9.3.*' '9.4.*' '9.5.*,9.6.*' '9.7.*,9.8.*')
fi
REF_PATH=${REF_PATH:-/m}
[[ $REPEATS =~ ^[1-9][0-9]*$ ]] || {
    echo "websocket-autobahn9.sh: REPEATS must be a positive integer (got '$REPEATS')" >&2
    exit 2
}

WB=${WB:-$REPO/target/release/wirebench}
if [[ ! -x $WB ]]; then
    echo "websocket-autobahn9.sh: building $WB (cargo build --release -p wirebench)" >&2
    (cd "$REPO" && cargo build --release -p wirebench) || {
        echo "websocket-autobahn9.sh: cargo build failed" >&2
        exit 2
    }
fi
export WB
# die, the PID list and its cleanup on EXIT/INT/TERM, start_wb, served_addr, run_suite,
# py27_venv, $OUT and $CONFORMANCE_DIR: the conformance scripts' harness.
source "$REPO/scripts/conformance/lib.sh"

VENV=$CONFORMANCE_DIR/autobahn-venv
py27_venv "$VENV" "$HERE/autobahn-requirements.txt"

# The reference, once per version: `go install` of a pinned version checks the module
# against the Go checksum database.
GORILLA=$CONFORMANCE_DIR/gorilla-websocket-$GORILLA_VERSION/autobahn
if [[ ! -x $GORILLA ]]; then
    command -v go >/dev/null || die "needs Go to build the reference server"
    echo "$NAME.sh: go install $GORILLA_MODULE/examples/autobahn@$GORILLA_VERSION" >&2
    GOBIN=$(dirname "$GORILLA") go install "$GORILLA_MODULE/examples/autobahn@$GORILLA_VERSION" \
        >"$OUT/go-install.log" 2>&1 || die "go install failed: $(cat "$OUT/go-install.log")"
fi

# start_wb greps its log at once: it must exist before the server's shell opens it.
: >"$OUT/serve.log"
start_wb 'websocket on' --also websocket=127.0.0.1:0
OURS_PID=${PIDS[-1]}
OURS_URL=ws://$(served_addr 'websocket on')/conformance

# The gorilla server says nothing when it listens: a free port, then wait until it
# answers its home page.
REF_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$GORILLA" -addr "127.0.0.1:$REF_PORT" >"$OUT/gorilla.log" 2>&1 &
PIDS+=($!)
REF_PID=$!
for _ in $(seq 200); do
    curl -sf -o /dev/null "http://127.0.0.1:$REF_PORT/" && break
    kill -0 "$REF_PID" 2>/dev/null || die "the gorilla server exited: $(cat "$OUT/gorilla.log")"
    sleep 0.05
done
curl -sf -o /dev/null "http://127.0.0.1:$REF_PORT/" ||
    die "the gorilla server did not answer in 10 s: $(cat "$OUT/gorilla.log")"
REF_URL=ws://127.0.0.1:$REF_PORT$REF_PATH

echo "websocket-autobahn9: wstest fuzzingclient, cases ${CASE_GROUPS[*]}, $REPEATS round(s), alternating"
echo "  ours:      $OURS_URL (wirebench serve --also websocket)"
echo "  reference: $REF_URL (gorilla/websocket $GORILLA_VERSION examples/autobahn)"
echo "  load average at start: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"

# cpu_ms PID: the time the process's threads have run so far, ms (their schedstat: ns,
# where /proc/PID/stat counts 10 ms ticks). Both servers keep their threads for the run.
cpu_ms() { cat /proc/"$1"/task/*/schedstat | awk '{ ns += $1 } END { printf "%.1f\n", ns / 1e6 }'; }

# one_run AGENT URL PID ROUND: wstest against one server, a run per group, each's reports
# in $OUT/AGENT-ROUND/gN/ and the server's CPU time over it in gN/cpu_ms.
one_run() {
    local agent=$1 url=$2 pid=$3 round=$4 n=0 t0=$SECONDS g dir c0
    for g in "${CASE_GROUPS[@]}"; do
        n=$((n + 1))
        dir=$OUT/$agent-$round/g$n
        mkdir -p "$dir"
        cat >"$dir/spec.json" <<EOF
{
  "outdir": "$dir/reports",
  "servers": [{"agent": "$agent", "url": "$url", "protocols": []}],
  "cases": $(python3 -c 'import json, sys; print(json.dumps(sys.argv[1].split(",")))' "$g"),
  "exclude-cases": [],
  "exclude-agent-cases": {}
}
EOF
        c0=$(cpu_ms "$pid")
        run_suite "$dir" "$dir/wstest.log" 1800 "$VENV/bin/wstest" -m fuzzingclient -s spec.json
        awk -v a="$c0" -v b="$(cpu_ms "$pid")" 'BEGIN { printf "%.1f\n", b - a }' >"$dir/cpu_ms"
        [[ -f $dir/reports/index.json ]] ||
            die "wstest wrote no report against $agent (exit $SUITE_RC): $dir/wstest.log"
    done
    echo "  round $round: $agent done in $((SECONDS - t0)) s"
}

for round in $(seq "$REPEATS"); do
    if ((round % 2)); then
        one_run ours "$OURS_URL" "$OURS_PID" "$round"
        one_run reference "$REF_URL" "$REF_PID" "$round"
    else
        one_run reference "$REF_URL" "$REF_PID" "$round"
        one_run ours "$OURS_URL" "$OURS_PID" "$round"
    fi
done
echo "  load average at end:   $(cut -d' ' -f1-3 /proc/loadavg)"
echo

python3 "$REPO/bench/lib/autobahn9-table.py" "$OUT" "$REPEATS" "${#CASE_GROUPS[@]}"
