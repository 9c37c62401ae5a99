#!/usr/bin/env bash
# QUIC goodput on loopback (127.0.0.1 only): our HTTP/3 server and client against
# quic-go's and ngtcp2's, in the same run, peers and ours alternating.
#
#   bash bench/quic.sh [--quick] [--help]
#
# One HTTP/3 `GET /N` of SIZE bytes per download (RFC 9114 over QUIC v1, RFC 9000), each
# pair REPEATS times, the median reported:
#   1. servers, the same client: quic-go's client (`-insecure -q`) and ngtcp2's
#      `gtlsclient` each download from our server (`wirebench serve --quic`), quic-go's
#      example server and ngtcp2's `gtlsserver`. Goodput is SIZE over the client
#      process's wall time (its start and handshake included: a few ms); the server's
#      CPU per MiB is its user + system time over all of a pair's downloads, from
#      /proc/PID/stat.
#      ratio = our server's goodput / the best peer server's      target >= 1.0
#      ratio = the best peer server's CPU/MiB / ours              target >= 1.0
#   2. clients, the same server: our client (`wirebench run --protocol quic --quic-app h3
#      --workload stream`, its `throughput.bits_per_s`: request to FIN, no start-up)
#      against quic-go's and ngtcp2's servers, beside their own clients' goodput there.
#      ratio = our client's goodput / the best peer client's      target >= 1.0
#   3. handshakes, our client: the connect workload (`--workload connect --quic-app h3`,
#      CONNECTS fresh connections one after another, each a `GET /100` and closed once
#      its handshake is confirmed) against our server, quic-go's and ngtcp2's: connections
#      per second (`connects.per_s`) and the time to the response (`ttfb.p50`).
#      ratio = connections/s against our server / against the best peer server
#
# Each endpoint runs at its own defaults: ours with 1200-byte datagrams and no path MTU
# discovery (quic.max-datagram), ngtcp2's started as our cases start it (1200 bytes, no
# PMTUD), quic-go's with its path MTU discovery (up to 1452 bytes on loopback). The
# figures are goodput (HTTP/3 bodies), not bytes on the wire.
#
# Needs: quic-go (bash scripts/install-quic-go.sh), ngtcp2's example client and server
# (apt-get install ngtcp2-client ngtcp2-server), openssl and jq; a missing one is named
# before anything runs.
#
# Environment (all optional):
#   WB        the wirebench binary (default target/release/wirebench, built if missing)
#   SIZE      bytes per download (default 20000000, the most ngtcp2's server generates;
#             --quick 8388608)
#   REPEATS   downloads per pair (default 5; --quick 1)
#   CONNECTS  connections per handshake run (default 500; --quick 50)
#   LOG_DIR   where outputs are kept (default a new /tmp/wirebench-quic.XXXXXX)
#
# Exit status 0 when everything ran, even if a target is missed.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
QUICK=0
while (($#)); do
    case $1 in
        --quick) QUICK=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "quic.sh: unknown argument: $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done
if ((QUICK)); then
    SIZE=${SIZE:-8388608}
    REPEATS=${REPEATS:-1}
    CONNECTS=${CONNECTS:-50}
else
    SIZE=${SIZE:-20000000}
    REPEATS=${REPEATS:-5}
    CONNECTS=${CONNECTS:-500}
fi
for v in SIZE REPEATS CONNECTS; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "quic.sh: $v must be a positive integer (got '${!v}')" >&2; exit 2; }
done

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib/pids.sh
source "$REPO/bench/lib/pids.sh"
die() { echo "quic.sh: error: $*" >&2; exit 1; }

QUIC_GO_BIN=$REPO/target/peers/quic-go-0.65.0/bin
missing=()
[[ -x $QUIC_GO_BIN/quic-go-server && -x $QUIC_GO_BIN/quic-go-client ]] ||
    missing+=("quic-go 0.65.0 (bash scripts/install-quic-go.sh)")
command -v gtlsserver >/dev/null || missing+=("gtlsserver (apt-get install ngtcp2-server)")
command -v gtlsclient >/dev/null || missing+=("gtlsclient (apt-get install ngtcp2-client)")
command -v openssl >/dev/null || missing+=("openssl (apt-get install openssl)")
command -v jq >/dev/null || missing+=("jq (apt-get install jq)")
((${#missing[@]} == 0)) || die "missing: ${missing[*]}"
WB=${WB:-$REPO/target/release/wirebench}
if [[ ! -x $WB ]]; then
    echo "building wirebench: cargo build --release -p wirebench"
    (cd "$REPO" && cargo build --release -p wirebench) || die "cargo build failed"
fi

LOG_DIR=${LOG_DIR:-$(mktemp -d /tmp/wirebench-quic.XXXXXX)}
mkdir -p "$LOG_DIR/www"
SERVER_PID=
trap 'stop_pids "$SERVER_PID"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# One key and certificate for the peers' servers (the clients do not verify).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -subj /CN=localhost -keyout "$LOG_DIR/key.pem" -out "$LOG_DIR/cert.pem" 2>/dev/null

# A free UDP port on 127.0.0.1.
free_udp_port() {
    python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# cpu_ticks PID: user + system clock ticks so far.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
TICK=$(getconf CLK_TCK)

# start_server NAME PORT: our server, quic-go's or ngtcp2's on 127.0.0.1:PORT.
start_server() {
    local name=$1 port=$2 log=$LOG_DIR/server-$1.log
    case $name in
        ours) "$WB" serve --listen 127.0.0.1:0 --quic "127.0.0.1:$port" >"$log" 2>&1 & ;;
        # Without -www: quic-go's example answers `GET /N` with N generated bytes.
        quic-go) "$QUIC_GO_BIN/quic-go-server" -bind "127.0.0.1:$port" \
            -cert "$LOG_DIR/cert.pem" -key "$LOG_DIR/key.pem" >"$log" 2>&1 & ;;
        # ngtcp2 generates `GET /N` when no file of that name is found, which it looks
        # for from its working directory: an empty one.
        ngtcp2) (cd "$LOG_DIR/www" && exec gtlsserver -q --no-quic-dump --no-http-dump \
            --no-pmtud --max-udp-payload-size=1200 -d . \
            127.0.0.1 "$port" "$LOG_DIR/key.pem" "$LOG_DIR/cert.pem") >"$log" 2>&1 & ;;
    esac
    SERVER_PID=$!
    sleep 1
    kill -0 "$SERVER_PID" 2>/dev/null || die "the $name server did not start: $(tail -3 "$log")"
}

# check CLIENT PORT: a GET of SIZE whose length is checked, since a 404 page is fast too
# (ngtcp2's server answers a /N above ~20 MB with one). quic-go's client prints a body
# it knows the length of, so the timed GETs discard it.
check() {
    local client=$1 port=$2 n=$SIZE got
    rm -rf "$LOG_DIR/dl" && mkdir "$LOG_DIR/dl"
    case $client in
        quic-go) "$QUIC_GO_BIN/quic-go-client" -insecure "https://127.0.0.1:$port/$n" 2>&1 |
            head -c 4096 >"$LOG_DIR/client.out" || true
            got=$(sed -n 's/.*Response Body[ (:]*\([0-9]*\) bytes.*/\1/p' "$LOG_DIR/client.out") ;;
        ngtcp2) gtlsclient -q --exit-on-all-streams-close --download "$LOG_DIR/dl" \
            127.0.0.1 "$port" "https://127.0.0.1:$port/$n" >"$LOG_DIR/client.out" 2>&1 || true
            got=$(stat -c %s "$LOG_DIR/dl/$n" 2>/dev/null || echo 0) ;;
    esac
    [[ $got == "$n" ]] || die "$client's client got ${got:-no} bytes for GET /$n, not $n (see $LOG_DIR)"
}

# download CLIENT PORT: one GET of SIZE bytes; prints "bits/s server_cpu_s".
download() {
    local client=$1 port=$2 url="https://127.0.0.1:$2/$SIZE" t0 t1 c0 c1
    c0=$(cpu_ticks "$SERVER_PID")
    t0=$(date +%s%N)
    case $client in
        quic-go) "$QUIC_GO_BIN/quic-go-client" -insecure -q "$url" >"$LOG_DIR/client.out" 2>&1 ;;
        ngtcp2) gtlsclient -q --exit-on-all-streams-close --max-udp-payload-size=1200 \
            --no-pmtud 127.0.0.1 "$port" "$url" >"$LOG_DIR/client.out" 2>&1 ;;
    esac || die "$client's client failed: $(tail -3 "$LOG_DIR/client.out")"
    t1=$(date +%s%N)
    c1=$(cpu_ticks "$SERVER_PID")
    awk -v s="$SIZE" -v ns=$((t1 - t0)) -v c=$((c1 - c0)) -v k="$TICK" \
        'BEGIN { printf "%.6g %.6g\n", s * 8 / (ns / 1e9), c / k }'
}

# ours_against SERVER: our client's goodput from a `wirebench run` against SERVER.
ours_against() {
    local server=$1 out=$LOG_DIR/run-$1-$RANDOM
    local chunk=$((SIZE >= 1048576 ? 1048576 : SIZE))
    "$WB" run --protocol quic --quic-app h3 --quic-server "$server" --workload stream \
        --payload "$chunk" --count $((SIZE / chunk)) --out "$out" -q >"$out.log" 2>&1 ||
        die "wirebench run against $server failed: $(tail -3 "$out.log")"
    jq -r 'select(.status == "ok") | .metrics["throughput.bits_per_s"].value' "$out/results.jsonl"
}

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mbit() { awk -v x="$1" 'BEGIN { printf "%.0f Mbit/s", x / 1e6 }'; }

declare -A GOODPUT CPU
SERVERS=(ours quic-go ngtcp2)
CLIENTS=(quic-go ngtcp2)
echo "quic.sh: $REPEATS download(s) of $SIZE bytes per pair; outputs in $LOG_DIR"
for server in "${SERVERS[@]}"; do
    port=$(free_udp_port)
    start_server "$server" "$port"
    for client in "${CLIENTS[@]}"; do
        check "$client" "$port"
        gs=() cs=()
        for ((r = 1; r <= REPEATS; r++)); do
            read -r g c < <(download "$client" "$port")
            gs+=("$g") cs+=("$c")
        done
        GOODPUT[$client,$server]=$(median "${gs[@]}")
        # Summed: /proc counts in 10 ms ticks, a fifth of one download's time.
        CPU[$client,$server]=$(printf '%s\n' "${cs[@]}" | awk '{ t += $1 } END { print t }')
        printf '  %-8s client, %-8s server: %s, server CPU %.2f s for %d downloads\n' "$client" \
            "$server" "$(mbit "${GOODPUT[$client,$server]}")" "${CPU[$client,$server]}" "$REPEATS"
    done
    stop_pids "$SERVER_PID"
    SERVER_PID=
done
for server in quic-go ngtcp2; do
    gs=()
    for ((r = 1; r <= REPEATS; r++)); do gs+=("$(ours_against "$server")"); done
    GOODPUT[ours,$server]=$(median "${gs[@]}")
    printf '  %-8s client, %-8s server: %s\n' ours "$server" "$(mbit "${GOODPUT[ours,$server]}")"
done

declare -A CPS TTFB
for server in builtin quic-go ngtcp2; do
    out=$LOG_DIR/connect-$server
    "$WB" run --protocol quic --quic-app h3 --quic-server "$server" --workload connect \
        --payload 100 --connects "$CONNECTS" --out "$out" -q >"$out.log" 2>&1 ||
        die "the connect workload against $server failed: $(tail -3 "$out.log")"
    CPS[$server]=$(jq -r 'select(.status == "ok") | .metrics["connects.per_s"].value' "$out/results.jsonl")
    TTFB[$server]=$(jq -r 'select(.status == "ok") | .metrics["ttfb.p50"].value' "$out/results.jsonl")
    awk -v c="${CPS[$server]}" -v t="${TTFB[$server]}" -v s="$server" \
        'BEGIN { printf "  ours     client, %-8s server: %.0f handshakes/s, time to the response p50 %.2f ms\n", s, c, t * 1000 }'
done

echo
echo "ratios (>= 1.0: ours is at least the best peer's):"
mib=$(awk -v s="$SIZE" -v r="$REPEATS" 'BEGIN { print s * r / 1048576 }')
for client in "${CLIENTS[@]}"; do
    best=quic-go
    awk -v a="${GOODPUT[$client,ngtcp2]}" -v b="${GOODPUT[$client,quic-go]}" 'BEGIN { exit !(a > b) }' && best=ngtcp2
    awk -v o="${GOODPUT[$client,ours]}" -v p="${GOODPUT[$client,$best]}" -v c="$client" -v b="$best" \
        'BEGIN { printf "  server goodput, %s client: ours / %s = %.2f\n", c, b, o / p }'
    lean=quic-go
    awk -v a="${CPU[$client,ngtcp2]}" -v b="${CPU[$client,quic-go]}" 'BEGIN { exit !(a < b) }' && lean=ngtcp2
    awk -v o="${CPU[$client,ours]}" -v p="${CPU[$client,$lean]}" -v m="$mib" -v c="$client" -v b="$lean" \
        'BEGIN { printf "  server CPU per MiB, %s client: ours %.2f ms, %s %.2f ms: %s / ours = %.2f\n", c, o * 1000 / m, b, p * 1000 / m, b, (o > 0 ? p / o : 0) }'
done
for server in quic-go ngtcp2; do
    best=quic-go
    awk -v a="${GOODPUT[ngtcp2,$server]}" -v b="${GOODPUT[quic-go,$server]}" 'BEGIN { exit !(a > b) }' && best=ngtcp2
    awk -v o="${GOODPUT[ours,$server]}" -v p="${GOODPUT[$best,$server]}" -v s="$server" -v b="$best" \
        'BEGIN { printf "  client goodput, %s server: ours / %s client = %.2f\n", s, b, o / p }'
done
best=quic-go
awk -v a="${CPS[ngtcp2]}" -v b="${CPS[quic-go]}" 'BEGIN { exit !(a > b) }' && best=ngtcp2
awk -v o="${CPS[builtin]}" -v p="${CPS[$best]}" -v b="$best" \
    'BEGIN { printf "  handshakes/s, our client: our server / %s = %.2f\n", b, o / p }'
