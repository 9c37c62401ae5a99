#!/usr/bin/env bash
# wirebench's HTTP and gRPC clients against the reference load generators, all against
# the SAME server: one `wirebench serve --also http=... --also grpc=...` on 127.0.0.1.
#
#   bench/rpc-peers.sh [--quick] [--help]
#
# Comparisons, 64-byte payloads echoed, one connection, each REPEATS times with the peer
# and wirebench alternating (the median of each side is reported):
#   1. HTTP/1.1 ping-pong (one request in flight):
#        wrk -t1 -c1 -d${SECONDS_PER_TEST}s --latency -s post.lua http://SERVER/echo
#        wirebench run --protocol http --payload 64 --rounds N --target SERVER
#      req/s ratio (target >= 0.9) and p99 ratio (target <= 1.1)
#   2. HTTP/1.1 open loop at RATE requests/s (default: a quarter of wrk's closed-loop
#      rate; at half of it, one VM hiccup's backlog decides the p99 of either tool, which
#      then spreads 10x between repeats):
#        oha -z ${SECONDS_PER_TEST}s -q RATE -c 1 --latency-correction http://SERVER/echo
#        wirebench run --protocol http --payload 64 --rounds N --rate RATE --target SERVER
#      achieved-rate ratio and p99 ratio (target <= 1.1); both time each request from its
#      intended send (no coordinated omission)
#   3. HTTP/2 ping-pong (prior knowledge, one stream at a time):
#        h2load -c1 -m1 -t1 -D ${SECONDS_PER_TEST} -d body http://SERVER/echo
#        wirebench run --protocol http --http-version 2 --payload 64 --rounds N --target SERVER
#      req/s ratio (target >= 0.9)
#   4. gRPC unary Echo:
#        ghz --insecure --cpus 1 -c 1 --connections 1 -z ${SECONDS_PER_TEST}s \
#            --proto protocols/grpc/plugin/proto/wirebench.proto --call wirebench.Bench.Echo
#        wirebench run --protocol grpc --payload 64 --rounds N --target SERVER
#      req/s ratio (target >= 0.9)
# N, wirebench's round count, is the peer's request count of the same repeat, so both run
# about as long. With 2 or more CPUs the server is pinned to CPU 0 and every client to
# CPU 1 (taskset): on a small VM, where the scheduler puts client and server moves a
# loopback round trip between ~25 us (same CPU) and ~80 us (two CPUs), which would
# otherwise decide the ratio.
#
# Missing peers are installed when possible (printing the command): wrk and h2load
# (Debian wrk, nghttp2-client; needs root), ghz (go install), oha (cargo install, ~3 min
# to build); a peer that cannot be installed has its comparison skipped.
#
# Environment (all optional):
#   WB                wirebench binary (default $REPO/target/release/wirebench; built with
#                     `cargo build --release -p wirebench` if missing)
#   SECONDS_PER_TEST  length of each peer's run (default 5; --quick: 2)
#   REPEATS           repeats of each comparison (default 3; --quick: 1)
#   RATE              the open-loop rate of comparison 2, requests/s (default: see above)
#   ONLY              comparisons to run, e.g. 1,3 (default 1,2,3,4)
#   LOG_DIR           where every raw output is kept (default: a new /tmp/wirebench-rpc-peers.XXXXXX)
#
# Exit status: 0 when every comparison ran (a missed target is reported, not an error);
# 1 when one failed or was skipped; 2 on bad input.

# shellcheck disable=SC2317  # cleanup is called through trap
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HOST=127.0.0.1
PAYLOAD=64
PROTO_FILE=$REPO/protocols/grpc/plugin/proto/wirebench.proto

QUICK=0
for a in "$@"; do
    case $a in
    --quick) QUICK=1 ;;
    -h | --help)
        sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
        exit 0
        ;;
    *)
        echo "rpc-peers.sh: unknown argument: $a (try --help)" >&2
        exit 2
        ;;
    esac
done
if ((QUICK)); then
    : "${SECONDS_PER_TEST:=2}" "${REPEATS:=1}"
fi
SECONDS_PER_TEST=${SECONDS_PER_TEST:-5}
REPEATS=${REPEATS:-3}
ONLY=${ONLY:-1,2,3,4}
for v in SECONDS_PER_TEST REPEATS; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || {
        echo "rpc-peers.sh: $v must be a positive integer (got '${!v}')" >&2
        exit 2
    }
done
[[ -z ${RATE:-} || $RATE =~ ^[1-9][0-9]*$ ]] || {
    echo "rpc-peers.sh: RATE must be a positive integer of requests/s (got '$RATE')" >&2
    exit 2
}
[[ $ONLY =~ ^[1-4](,[1-4])*$ ]] || {
    echo "rpc-peers.sh: ONLY must list comparisons 1 to 4, e.g. 1,3 (got '$ONLY')" >&2
    exit 2
}
wanted() { [[ ,$ONLY, == *,$1,* ]]; }

die() {
    echo "rpc-peers.sh: error: $*" >&2
    exit 1
}
log() { printf '%s\n' "$*"; }
show_cmd() {
    printf '  $'
    printf ' %q' "$@"
    printf '\n'
}
command -v python3 >/dev/null || die "python3 is missing"

# ---------------------------------------------------------------- peers
export PATH=$PATH:${GOBIN:-$HOME/go/bin}:$HOME/.cargo/bin
APT_UPDATED=0
install_peer() { # name command...
    local name=$1
    shift
    log "installing $name:"
    show_cmd "$@"
    "$@" >"$LOG_DIR/install-$name.log" 2>&1 || {
        log "  failed (log: $LOG_DIR/install-$name.log)"
        return 1
    }
}
have() { # command: present, or installed now
    command -v "$1" >/dev/null && return 0
    case $1 in
    wrk | h2load)
        local pkg=wrk
        [[ $1 == h2load ]] && pkg=nghttp2-client
        if ((EUID == 0)) && command -v apt-get >/dev/null; then
            if ((!APT_UPDATED)); then
                install_peer apt-update apt-get update || return 1
                APT_UPDATED=1
            fi
            DEBIAN_FRONTEND=noninteractive install_peer "$pkg" apt-get install -y "$pkg" || return 1
        fi
        ;;
    ghz)
        command -v go >/dev/null && install_peer ghz go install github.com/bojand/ghz/cmd/ghz@latest
        ;;
    oha)
        command -v cargo >/dev/null && install_peer oha cargo install --locked oha
        ;;
    esac
    command -v "$1" >/dev/null
}

# ---------------------------------------------------------------- set-up
LOG_DIR=${LOG_DIR:-$(mktemp -d /tmp/wirebench-rpc-peers.XXXXXX)}
mkdir -p "$LOG_DIR"
LOG_DIR=$(cd "$LOG_DIR" && pwd)
WB=${WB:-$REPO/target/release/wirebench}
if [[ ! -x $WB ]]; then
    log "building wirebench:"
    show_cmd cargo build --release -p wirebench
    (cd "$REPO" && cargo build --release -p wirebench) || die "cargo build failed"
    [[ -x $WB ]] || die "build finished but $WB is missing"
fi

SERVER_CPU=()
CLIENT_CPU=()
if (($(nproc) >= 2)) && command -v taskset >/dev/null; then
    SERVER_CPU=(taskset -c 0)
    CLIENT_CPU=(taskset -c 1)
fi

SERVE_PID=
cleanup() {
    if [[ -n $SERVE_PID ]] && kill -0 "$SERVE_PID" 2>/dev/null; then
        kill "$SERVE_PID" 2>/dev/null || true
        wait "$SERVE_PID" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "== wirebench HTTP/gRPC clients vs wrk, oha, h2load, ghz on one server ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -sr), $(nproc) cpus)"
log "wirebench: $WB ($("$WB" --version 2>/dev/null | head -n 1 || echo 'version unknown'))"
log "logs: $LOG_DIR"
serve_cmd=("${SERVER_CPU[@]}" "$WB" serve --listen "$HOST:0" --also "http=$HOST:0" --also "grpc=$HOST:0")
log "server:"
show_cmd "${serve_cmd[@]}"
"${serve_cmd[@]}" >"$LOG_DIR/serve.log" 2>&1 &
SERVE_PID=$!
HTTP_ADDR=
GRPC_ADDR=
for _ in $(seq 100); do
    HTTP_ADDR=$(sed -n 's/^wirebench serve: http on \(.*\)$/\1/p' "$LOG_DIR/serve.log")
    GRPC_ADDR=$(sed -n 's/^wirebench serve: grpc on \(.*\)$/\1/p' "$LOG_DIR/serve.log")
    [[ -n $HTTP_ADDR && -n $GRPC_ADDR ]] && break
    kill -0 "$SERVE_PID" 2>/dev/null || die "the server ended: $(cat "$LOG_DIR/serve.log")"
    sleep 0.1
done
[[ -n $HTTP_ADDR && -n $GRPC_ADDR ]] || die "the server did not say where it listens: $LOG_DIR/serve.log"
log "http on $HTTP_ADDR, grpc on $GRPC_ADDR"

head -c "$PAYLOAD" /dev/zero | tr '\0' x >"$LOG_DIR/body"
cat >"$LOG_DIR/post.lua" <<EOF
wrk.method = "POST"
wrk.body = string.rep("x", $PAYLOAD)
wrk.headers["Content-Type"] = "application/octet-stream"
EOF
BODY_B64=$(base64 -w0 "$LOG_DIR/body")

# ---------------------------------------------------------------- runners
# Each prints "REQS RPS P99_SECONDS" (P99 "-" when the tool gives none) or fails.
wb_run() { # tag rounds args...
    local tag=$1 rounds=$2
    shift 2
    local out=$LOG_DIR/wb-$tag
    rm -rf "$out"
    "${CLIENT_CPU[@]}" "$WB" run --workload pingpong --payload "$PAYLOAD" --rounds "$rounds" \
        --out "$out" --no-report --quiet "$@" >"$out.log" 2>&1 || {
        echo "wirebench failed ($out.log): $(tail -n 2 "$out.log")" >&2
        return 1
    }
    python3 - "$out/results.jsonl" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).readline())
m = {k: v["value"] for k, v in r["metrics"].items()}
if r.get("status", "ok") != "ok":
    sys.exit("case failed: " + str(r.get("error")))
rps = m.get("rate.achieved", m.get("throughput.requests_per_s"))
print(int(m["messages.received"]), rps, m["rtt.p99"])
PY
}

wrk_run() {
    local out=$LOG_DIR/wrk-$1.txt
    "${CLIENT_CPU[@]}" wrk -t1 -c1 -d"${SECONDS_PER_TEST}s" --latency -s "$LOG_DIR/post.lua" \
        "http://$HTTP_ADDR/echo" >"$out" 2>&1 || {
        echo "wrk failed: $(tail -n 2 "$out")" >&2
        return 1
    }
    python3 - "$out" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
n = int(re.search(r"(\d+) requests in", t).group(1))
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
v, u = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", t, re.M).groups()
print(n, rps, float(v) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[u])
PY
}

oha_run() { # tag rate
    local out=$LOG_DIR/oha-$1.json
    "${CLIENT_CPU[@]}" oha --no-tui --output-format json -z "${SECONDS_PER_TEST}s" -q "$2" -c 1 \
        --latency-correction -m POST -T application/octet-stream \
        -D "$LOG_DIR/body" "http://$HTTP_ADDR/echo" >"$out" 2>"$out.err" || {
        echo "oha failed: $(tail -n 2 "$out.err")" >&2
        return 1
    }
    python3 - "$out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
s = j["summary"]
codes = j.get("statusCodeDistribution", {})
n = sum(int(v) for v in codes.values())
if set(codes) - {"200"}:
    sys.exit(f"oha saw statuses {codes}")
print(n, s["requestsPerSec"], j["latencyPercentiles"]["p99"])
PY
}

h2load_run() {
    local out=$LOG_DIR/h2load-$1.txt
    "${CLIENT_CPU[@]}" h2load -c1 -m1 -t1 -D "$SECONDS_PER_TEST" -d "$LOG_DIR/body" \
        "http://$HTTP_ADDR/echo" >"$out" 2>&1 || {
        echo "h2load failed: $(tail -n 2 "$out")" >&2
        return 1
    }
    python3 - "$out" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
m = re.search(r"requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded", t)
if int(m.group(3)) != int(m.group(2)):
    sys.exit("h2load: not every request succeeded")
rps = float(re.search(r"finished in [\d.]+s, ([\d.]+) req/s", t).group(1))
print(m.group(3), rps, "-")
PY
}

ghz_run() {
    local out=$LOG_DIR/ghz-$1.json
    "${CLIENT_CPU[@]}" ghz --insecure --cpus 1 -c 1 --connections 1 -z "${SECONDS_PER_TEST}s" \
        --proto "$PROTO_FILE" --call wirebench.Bench.Echo -d "{\"data\":\"$BODY_B64\"}" \
        -O json "$GRPC_ADDR" >"$out" 2>"$out.err" || {
        echo "ghz failed: $(tail -n 2 "$out.err")" >&2
        return 1
    }
    python3 - "$out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
codes = j.get("statusCodeDistribution", {})
# -z ends the run by cancelling the call in flight: one non-OK status is that call.
if sum(v for k, v in codes.items() if k != "OK") > 1:
    sys.exit(f"ghz saw statuses {codes}")
p99 = next((d["latency"] for d in j.get("latencyDistribution") or [] if d["percentage"] == 99), None)
print(codes.get("OK", 0), j["rps"], p99 / 1e9 if p99 else "-")
PY
}

# ---------------------------------------------------------------- comparisons
RC=0
RESULTS=$LOG_DIR/results.txt
: >"$RESULTS"

compare() { # id title peer-name peer-fn wb-args...
    local id=$1 title=$2 peer=$3 fn=$4
    shift 4
    wanted "$id" || return 0
    log ""
    log "== $id. $title"
    if ! have "$peer"; then
        log "skipped: $peer is missing and could not be installed"
        RC=1
        return 0
    fi
    local i p w
    for i in $(seq "$REPEATS"); do
        if ! p=$("$fn" "$id-$i" "${RATE_NOW:-}"); then
            RC=1
            return 0
        fi
        local n=${p%% *}
        ((n > 0)) || {
            log "$peer completed no request"
            RC=1
            return 0
        }
        if ! w=$(wb_run "$id-$i" "$n" "$@"); then
            RC=1
            return 0
        fi
        log "  repeat $i: $peer ${p#* } | wirebench ${w#* }   (requests/s, p99 s)"
        echo "$id $peer $p wirebench $w" >>"$RESULTS"
    done
}

http_args=(--protocol http --target "$HTTP_ADDR")
compare 1 "HTTP/1.1 ping-pong, $PAYLOAD B, 1 connection" wrk wrk_run "${http_args[@]}"

if wanted 2; then
    if [[ -z ${RATE:-} ]]; then
        # A quarter of what wrk reached closed-loop (see --help).
        RATE=$(awk '$1 == 1 { print $4 }' "$RESULTS" | sort -g | awk '{ a[NR] = $1 } END { if (NR) print int(a[int((NR + 1) / 2)] / 4) }')
        if [[ -z $RATE ]]; then
            p=$(wrk_run rate-probe) || die "wrk is needed to choose RATE (or set RATE)"
            RATE=$(echo "$p" | awk '{ print int($2 / 4) }')
        fi
    fi
    RATE_NOW=$RATE compare 2 "HTTP/1.1 open loop at $RATE requests/s, $PAYLOAD B, 1 connection" \
        oha oha_run "${http_args[@]}" --rate "$RATE/s"
fi
compare 3 "HTTP/2 ping-pong, $PAYLOAD B, 1 connection, 1 stream at a time" h2load h2load_run \
    "${http_args[@]}" --http-version 2
compare 4 "gRPC unary Echo, $PAYLOAD B, 1 connection, 1 call at a time" ghz ghz_run \
    --protocol grpc --target "$GRPC_ADDR"

# ---------------------------------------------------------------- table
log ""
log "== medians of $REPEATS repeat(s), ${SECONDS_PER_TEST} s each (raw figures: $RESULTS)"
python3 - "$RESULTS" <<'PY' || RC=1
import statistics, sys
rows = {}
names = {
    "1": ("HTTP/1.1 ping-pong", "wrk", ">= 0.9", "<= 1.1"),
    "2": ("HTTP/1.1 open loop", "oha", "= rate", "<= 1.1"),
    "3": ("HTTP/2 ping-pong", "h2load", ">= 0.9", ""),
    "4": ("gRPC unary", "ghz", ">= 0.9", ""),
}
for line in open(sys.argv[1]):
    # id peer n rps p99 wirebench n rps p99
    f = line.split()
    if len(f) != 9:
        continue
    r = rows.setdefault(f[0], {"p": [], "w": [], "pp": [], "wp": []})
    r["p"].append(float(f[3]))
    r["w"].append(float(f[7]))
    if f[4] != "-":
        r["pp"].append(float(f[4]))
    r["wp"].append(float(f[8]))
if not rows:
    sys.exit("no comparison ran")
def us(v):
    return f"{v * 1e6:.0f} us"
print("| comparison | peer | peer req/s | wirebench req/s | ratio (target) | peer p99 | wirebench p99 | p99 ratio (target) |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for cid in sorted(rows):
    title, peer, rt, pt = names[cid]
    r = rows[cid]
    p, w = statistics.median(r["p"]), statistics.median(r["w"])
    line = f"| {title} | {peer} | {p:,.0f} | {w:,.0f} | {w / p:.2f} ({rt}) |"
    if r["pp"]:
        pp, wp = statistics.median(r["pp"]), statistics.median(r["wp"])
        line += f" {us(pp)} | {us(wp)} | {wp / pp:.2f} ({pt or 'none'}) |"
    else:
        line += f" - | {us(statistics.median(r['wp']))} | - |"
    print(line)
PY
exit "$RC"
