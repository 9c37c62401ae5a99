#!/usr/bin/env bash
# wirebench's HTTP/2 client (the `http` protocol's, workloads/rpc/src/http/client.rs: the h2
# crate, cleartext with prior knowledge) against strict, well-known HTTP/2 servers on
# 127.0.0.1 (issue #32): nghttpd (nghttp2's server, libnghttp2, the reference
# implementation; Debian package nghttp2-server) and golang.org/x/net/http2's server
# (Go module, scripts/conformance/h2server/). Both echo POST bodies, as `wirebench serve`
# does, so the client's ping-pong runs unchanged against them with `--target`.
#
#   bash scripts/conformance/h2-client.sh
#   SERVERS=go bash scripts/conformance/h2-client.sh       # only the Go server
#
# Per server, the cases: ping-pong with payloads 1 B to 1 MiB over 1 and 4 connections
# (200 round trips each), 16 MiB (flow control over many windows; 10 each), and an open
# loop at 5000/s with 16 KiB (requests in flight at once on one connection). A case passes
# when wirebench reports it ok (every echo back and intact) and the server saw no
# protocol error: nghttpd's frame log (-v) has no RST_STREAM or GOAWAY with an error code
# either way, the Go server counted none (http2.Server.CountError) and logged none.
# Prints each failing case, then `h2-client: N passed, N failed, N skipped`. Exits 1 when
# a case failed, 2 when a server could not be installed or started. Also: WB,
# CONFORMANCE_DIR (lib.sh). Logs and results in target/conformance/h2-client-run/.
set -euo pipefail
# shellcheck source=scripts/conformance/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SERVERS=${SERVERS:-nghttpd go}

# start_server NAME READY_REGEX CMD...: runs CMD with output to $OUT/NAME.log and waits
# for READY_REGEX there; sets SERVER_ADDR to the first 127.0.0.1:PORT on that line.
start_server() {
    local name=$1 ready=$2
    shift 2
    "$@" >"$OUT/$name.log" 2>&1 &
    PIDS+=($!)
    local pid=$! line=
    for _ in $(seq 200); do
        line=$(grep -E "$ready" "$OUT/$name.log" | head -1 || true)
        [[ -n $line ]] && break
        kill -0 "$pid" 2>/dev/null || die "$name exited: $(cat "$OUT/$name.log")"
        sleep 0.05
    done
    [[ -n $line ]] || die "$name did not start in 10 s: $(cat "$OUT/$name.log")"
    SERVER_ADDR=$(grep -oE '127\.0\.0\.1:[0-9]+' <<<"$line" | head -1)
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# run_cases SERVER ADDR: the client's cases against ADDR, each run's results in
# $OUT/SERVER-N/ (wirebench exits 1 when a case failed; the results say which).
run_cases() {
    local server=$1 addr=$2 n=0
    local runs=(
        "--payload 1,100,64KiB,1MiB --connections 1,4 --rounds 200"
        "--payload 16MiB --connections 1,4 --rounds 10"
        "--payload 16KiB --rate 5000/s --rounds 5000"
    )
    for r in "${runs[@]}"; do
        n=$((n + 1))
        # shellcheck disable=SC2086
        "$WB" run --protocol http --http-version 2 --target "$addr" --workload pingpong \
            $r --out "$OUT/$server-$n" >"$OUT/$server-$n.log" 2>&1 || true
    done
}

for server in $SERVERS; do
    case $server in
    nghttpd)
        command -v nghttpd >/dev/null ||
            die "needs nghttpd (Debian/Ubuntu: apt-get install nghttp2-server), or SERVERS=go"
        mkdir -p "$OUT/htdocs"
        port=$(free_port)
        start_server nghttpd 'listen 127\.0\.0\.1' \
            nghttpd --no-tls --echo-upload -v -a 127.0.0.1 -d "$OUT/htdocs" "$port"
        echo "h2-client: $(nghttpd --version | head -1) at $SERVER_ADDR (h2c, --echo-upload)"
        ;;
    go)
        command -v go >/dev/null || die "needs Go to build the x/net/http2 server, or SERVERS=nghttpd"
        bin=$CONFORMANCE_DIR/bin/h2server
        mkdir -p "$CONFORMANCE_DIR/bin"
        (cd "$HERE/h2server" && go build -mod=readonly -o "$bin" .) >"$OUT/go-build.log" 2>&1 ||
            die "go build of scripts/conformance/h2server failed: $(cat "$OUT/go-build.log")"
        start_server go 'h2server listening' "$bin"
        echo "h2-client: golang.org/x/net/http2 $(grep -oE 'golang.org/x/net v[^ ]+' "$HERE/h2server/go.mod" | cut -d' ' -f2) server at $SERVER_ADDR (h2c prior knowledge only)"
        ;;
    *) die "unknown server $server (nghttpd, go)" ;;
    esac
    run_cases "$server" "$SERVER_ADDR"
done

# shellcheck disable=SC2086 # one argument per server
python3 - "$OUT" $SERVERS <<'PY'
import glob, json, os, re, sys
out, servers = sys.argv[1], sys.argv[2:]
passed = failed = 0
for server in servers:
    log = open(os.path.join(out, server + ".log"), errors="replace").read()
    if server == "nghttpd":
        errors = [l.strip() for l in re.findall(r"^.*(?:RST_STREAM|GOAWAY) frame.*\n.*$", log, re.M)
                  if "NO_ERROR" not in l]
    else:
        errors = [l.strip() for l in log.splitlines() if l.startswith(("h2server error", "h2server log"))]
    runs = sorted(glob.glob(os.path.join(out, server + "-*", "results.jsonl")))
    n = sum(1 for _ in glob.glob(os.path.join(out, server + "-[0-9]")))
    if len(runs) < n:
        for d in sorted(glob.glob(os.path.join(out, server + "-[0-9]"))):
            if not os.path.exists(os.path.join(d, "results.jsonl")):
                failed += 1
                why = open(d + ".log", errors="replace").read().strip().splitlines()[-1:] or ["no output"]
                print(f"FAILED  {server} {os.path.basename(d)}: wirebench wrote no results: {why[0]}")
    if n == 0:
        failed += 1
        print(f"FAILED  {server}: no run")
    for f in runs:
        for line in open(f):
            r = json.loads(line)
            p = r["params"]
            case = f"{server} payload={p['payload']} connections={p.get('connections')}" + (
                f" rate={p['rate']}" if "rate" in p else "")
            if r["status"] == "ok" and not errors:
                passed += 1
            else:
                failed += 1
                why = r.get("error") or r["status"]
                if errors:
                    why += f"; the server saw {len(errors)} protocol error(s), first: {errors[0][:200]}"
                print(f"FAILED  {case}: {why}")
print(f"h2-client: {passed} passed, {failed} failed, 0 skipped")
sys.exit(1 if failed or not passed else 0)
PY
