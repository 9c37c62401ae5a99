#!/usr/bin/env bash
# The servers wirebench ships against hostile clients (issue #34), on 127.0.0.1 only.
#
#   bench/hostile.sh [--quick] [--help] [SERVER...]
#
# SERVER: xmpp (the built-in XMPP server, `serve --xmpp`), ws (its WebSocket gateway,
# `serve --xmpp-websocket`, RFC 7395), http (the HTTP bench server, `serve --also http=`),
# bosh and sockjs (its BOSH and SockJS gateways, `serve --xmpp-bosh`, `--xmpp-sockjs`),
# soap, grpc, websocket (the other bench servers of `serve --also`); default: all of
# them, in turn, each started fresh. The proxies (named only; each
# connects to an echo origin of hostile.py's on 127.0.0.1): socks5 (`serve --also
# socks5=`), ss (Shadowsocks, `serve --also shadowsocks=`), convert (`wirebench
# converter`, RFC 8803), cclient (`wirebench converter-client`, the SOCKS5 front that
# sends through that converter). Named only as well: control (`wirebench serve`'s control
# port), barrier (shard 0 of a 2-shard load run waiting at its barrier, `run --shard 0/2
# --barrier`, with the built-in XMPP server as its load target; after the attacks a real
# shard 1 joins and the run must finish), x2x (`wirebench x2x`, the XEP-0361 gateway's
# link listener, its peer 127.0.0.1 and no XMPP server behind it). Against each, one run
# of each attack
# (bench/lib/hostile.py, Python 3, standard library only, several processes):
#   none       no attack, for SECS seconds: the client measured twice with nothing in
#              between, the ratio's noise floor on this machine (first of each server)
#   idle       IDLE connections that send nothing (default 9,984: the built-in server's
#              default cap of 10,000 sessions less room for the well-behaved client)
#   slowloris  SLOW connections sending the opening (XMPP stream header, HTTP request
#              head) one byte a second, then a space a second
#   oversized  a stanza / frame / header / body far over the cap, 8 MiB at full speed,
#              and an XMPP stream header / HTTP header line that never ends
#   garbage    4 KiB of random bytes, on a fresh connection and after a valid opening
#   halfopen   half the connections stop reading while the server writes to them (XMPP,
#              and ws through the gateway: logged-in sessions another session floods
#              with 1 KB messages; HTTP: pipelined GETs; gRPC: 1 KB Echo calls);
#              the other half send half an opening, shutdown(SHUT_WR) and linger
#   relay      (socks5, convert, cclient; a control, not an attack) halfopen's upload,
#              HALF/2 connections sending 1 KB every 5 ms through to the origin, from
#              clients that read the echo: what relaying that traffic costs the client
#   flood      new connections, connect and close (RST) as fast as possible
#   smuggle    (http and ws) two Content-Lengths, chunked + Content-Length both ways,
#              an obfuscated Transfer-Encoding, each with a request hidden behind it
#   disallowed (proxies) destinations outside the allow list: TEST-NET-1, this host's
#              own address on the origin's port, a name (SOCKS5); ss through ss-local
#   sessions   (bosh and sockjs) IDLE sessions created, one request each, and abandoned:
#              each holds a connection to the XMPP server until it expires
# For the proxies the opening is the handshake to the origin (SOCKS5 greeting and
# CONNECT, the Convert message; for Shadowsocks random bytes, as a prober's), oversized
# is 8 MiB through to the origin without reading its echo (the relay must push back)
# or the longest greeting/header then more, half-open's non-readers do the same with
# 1 KB writes, and the well-behaved client is a connect-through-and-echo loop
# (hostile.py proxy-client, CLIENT_SECS seconds: connect, handshake, 32 bytes echoed,
# close; for ss through ss-local, whose cost is in its p99). For control and barrier the
# opening is a hello line (the barrier's from shard index 0, which it refuses without
# ending the run) and the well-behaved client a new connection's hello and its answer,
# again and again (hostile.py line-client); for x2x it is the link marker and the client
# its peer on 127.0.0.1 sending messages to a domain the gateway does not serve, each
# answered over the link with an error (hostile.py x2x-client). The attackers' sources
# (127.N.0.2-9, N one per attack) are not x2x's peer: it refuses them unread.
# and prints one table row per (server, attack): the server's VmRSS (it and its child
# processes, /proc/PID/status) before, at the peak during and after the attack, MiB; the
# peak's growth per attacking connection, KiB; the p99 of a well-behaved client without
# and during the attack and their ratio (target <= 2); whether the server is still alive
# (and its log has no 'panicked'); what the attack saw; the last log line the server
# printed (an operator's view). After the table, the verdict (hostile.py verdict): how
# many rows kept the client within 2x (a proxy's halfopen row also when it cost no more
# than its relay row: a proxy relays an upload whether or not its client reads the
# echo, and on one shared CPU that traffic alone can double the client's p99), the noise floor of that ratio (the `none` rows,
# the client measured twice with no attack between: a row over 2x on a server whose
# floor is near 2x says little), the rows over 2x, any server dead, and the rows after
# which the server's memory did not come back within 16 MiB of its level before. The well-behaved client: the hold_sessions example's
# ping-pong (two sessions, ROUNDS messages) for xmpp, a keep-alive GET loop (hostile.py
# http-client, CLIENT_SECS seconds) for http, each the median p99 of RUNS runs; the ws gateway has no such client here, its
# p99 column is the XMPP ping-pong through the built-in server behind it. For bosh,
# sockjs, soap, grpc and websocket: see web_server below.
#
# Every server runs with its default ban policy (`serve --ban-after 100 --ban-for 60s`,
# wirebench_net::ban): a source refused 100 times within 10 s for what it sent has its
# SYNs dropped for a minute, which the oversized and garbage rows show as connects that
# timed out. Each attack comes from sources of its own (127.N.0.2-9), so that a ban an
# earlier attack earned does not meet it.
#
# The built-in server runs with --xmpp-handshake-timeout HANDSHAKE (default 10s, so that
# the idle and slowloris connections are reaped within the run; the server's default is
# 30s) and its other caps at their defaults (--xmpp-max-stanza 64KiB, --xmpp-max-queued
# 4MiB, --xmpp-sessions 10000). The gateways get --xmpp-web-opening-timeout HANDSHAKE and
# the --also servers --also-header-timeout HANDSHAKE (both 30s by default), likewise, and
# BOSH --xmpp-bosh-inactivity HANDSHAKE (60s by default).
#
# Environment: WB (wirebench binary; default target/release/wirebench, built if missing),
# RUNS (client runs whose median p99 is taken, each side, 5; give SECS room for them),
# IDLE (9984), SLOW (1000), HALF (half-open connections, 100), SECS (seconds per attack, default 10, --quick 8; idle and
# slowloris last HANDSHAKE + 4 s), ROUNDS (20000, --quick 5000), CLIENT_SECS (1), PROCS
# (attacking processes, 2), HANDSHAKE (10s), ATTACKS (the attacks to run, default all:
# "none idle slowloris oversized garbage halfopen relay flood smuggle disallowed sessions"), ATTACK_CPUS (a
# taskset CPU list for the attackers, e.g. 1; default: any CPU).
#
# On a machine this small the attackers compete with the server and the well-behaved
# client for CPU, so a full-speed attack's p99 ratio measures that contention as much as
# the server. To keep them apart: `ATTACK_CPUS=1 taskset -c 0 bash bench/hostile.sh`
# (the server and the client inherit CPU 0, the attackers get CPU 1; the server then sees
# one CPU and runs one worker).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
QUICK=0
SERVERS=()
for a in "$@"; do
    case $a in
    --quick) QUICK=1 ;;
    --help | -h)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    xmpp | ws | http | socks5 | ss | convert | cclient) SERVERS+=("$a") ;;
    control | barrier | x2x) SERVERS+=("$a") ;; # h1ctl's block below
    bosh | sockjs | soap | grpc | websocket) SERVERS+=("$a") ;; # h1web's block below
    *)
        echo "hostile.sh: unknown argument $a (try --help)" >&2
        exit 2
        ;;
    esac
done
((${#SERVERS[@]})) || SERVERS=(xmpp ws http bosh sockjs soap grpc websocket)
if ((QUICK)); then
    : "${SECS:=8}" "${ROUNDS:=5000}" "${IDLE:=2000}" "${SLOW:=200}"
else
    : "${SECS:=10}" "${ROUNDS:=20000}" "${IDLE:=9984}" "${SLOW:=1000}"
fi
: "${CLIENT_SECS:=1}" "${PROCS:=2}" "${HALF:=100}" "${HANDSHAKE:=10s}" "${RUNS:=5}"
: "${ATTACKS:=none idle slowloris oversized garbage halfopen relay flood smuggle disallowed sessions}"
LONG=$((${HANDSHAKE%s} + 4))
ATTACK_TASKSET=()
if [[ -n ${ATTACK_CPUS:-} ]]; then
    command -v taskset >/dev/null || { echo "hostile.sh: ATTACK_CPUS needs taskset (util-linux)" >&2; exit 1; }
    ATTACK_TASKSET=(taskset -c "$ATTACK_CPUS")
fi

die() {
    echo "hostile.sh: $*" >&2
    exit 1
}
command -v python3 >/dev/null || die "python3 is missing"
WB=${WB:-$REPO/target/release/wirebench}
if [[ ! -x $WB ]]; then
    (cd "$REPO" && cargo build --release -p wirebench) || die "cargo build failed"
fi
HOLD=$REPO/target/release/examples/hold_sessions
(cd "$REPO" && cargo build --release -q -p wirebench-xmpp-load --example hold_sessions) ||
    die "cargo build failed"
HOSTILE=$REPO/bench/lib/hostile.py

LOG=$(mktemp -d /tmp/wirebench-hostile.XXXXXX)
SERVER_PID=
ATTACK_PID=
NET=0
HELPER_PIDS=
# shellcheck source=bench/lib/pids.sh
. "$REPO/bench/lib/pids.sh"
# shellcheck disable=SC2086 # HELPER_PIDS is a list of numbers
cleanup() { stop_pids "$ATTACK_PID" "$SERVER_PID" $HELPER_PIDS; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# launch NAME WANT CMD...: CMD in the background, logging to $LOG/NAME.log, waiting for
# WANT (e.g. the line naming its last listener) in its log; its PID in LAUNCHED.
launch() {
    local name=$1 want=$2 what="${3##*/} ${4:-}"
    shift 2
    "$@" >"$LOG/$name.log" 2>&1 &
    LAUNCHED=$!
    for _ in $(seq 200); do
        grep -q "$want" "$LOG/$name.log" 2>/dev/null && return 0
        kill -0 "$LAUNCHED" 2>/dev/null || die "$what did not start; see $LOG/$name.log"
        sleep 0.05
    done
    die "$what did not say '$want'; see $LOG/$name.log"
}
# start_server NAME WANT ARGS...: `wirebench serve ARGS`, the server under attack.
start_server() {
    local name=$1 want=$2
    shift 2
    launch "$name" "$want" "$WB" serve --listen 127.0.0.1:0 "$@"
    SERVER_PID=$LAUNCHED
}
stop_server() {
    stop_pids "$SERVER_PID"
    SERVER_PID=
}

# p99 KIND: the well-behaved client's p99 in microseconds, the median of RUNS runs
# (the machine is shared); "failed: ..." if a run failed.
p99() {
    local r=() v
    for _ in $(seq "$RUNS"); do
        v=$(p99_once "$1")
        [[ $v == failed* ]] && {
            echo "$v"
            return
        }
        r+=("$v")
    done
    printf '%s\n' "${r[@]}" | sort -g | sed -n "$(((RUNS + 1) / 2))p"
}
p99_once() {
    local out=$LOG/client.out
    case $1 in
    xmpp) "$HOLD" "127.0.0.1:$XPORT" wirebench.test 2 --hold 0 --pingpong "$ROUNDS" >"$out" 2>&1 || true ;;
    http) python3 "$HOSTILE" http-client "127.0.0.1:$HPORT" "$CLIENT_SECS" >"$out" 2>&1 || true ;;
    proxy) python3 "$HOSTILE" proxy-client "$PROXY_PROTO" "$PROXY_AT" "127.0.0.1:$OPORT" "$CLIENT_SECS" >"$out" 2>&1 || true ;;
    control | barrier) python3 "$HOSTILE" line-client "$1" "$CLIENT_AT" "$CLIENT_SECS" >"$out" 2>&1 || true ;;
    x2x) python3 "$HOSTILE" x2x-client "$CLIENT_AT" "$CLIENT_SECS" >"$out" 2>&1 || true ;;
    *) web_client "$1" >"$out" 2>&1 || true ;; # h1web's block below
    esac
    local v
    v=$(sed -n 's/.* p99 \([0-9.]*\) us.*/\1/p' "$out" | tail -n 1)
    if [[ -n $v ]]; then
        echo "$v"
    else
        echo "failed: $(grep -m1 -E 'fail|error|refused' "$out" | tr -d '|' | cut -c1-80)"
    fi
}

# attack SERVER PROTO CLIENT TARGET ATTACK ARGS...: one attack with the client measured
# before and during it; prints the table row.
attack() {
    local server=$1 proto=$2 client=$3 target=$4 what=$5
    shift 5
    local base during logline ready=$LOG/ready out=$LOG/$server-$what.json offset
    base=$(p99 "$client")
    offset=$(stat -c %s "$LOG/$server.log")
    rm -f "$ready"
    # Each attack from sources of its own (127.NET.0.2-9): a ban an earlier attack earned
    # is not this one's to meet.
    NET=$((NET % 250 + 1))
    ${ATTACK_TASKSET[@]+"${ATTACK_TASKSET[@]}"} python3 "$HOSTILE" "$what" --proto "$proto" --target "$target" --pids "$SERVER_PID" \
        --procs "$PROCS" --ready "$ready" --origin "127.0.0.1:${OPORT:-9}" --net "$NET" "$@" >"$out" 2>"$LOG/$server-$what.err" &
    ATTACK_PID=$!
    while [[ ! -e $ready ]] && kill -0 "$ATTACK_PID" 2>/dev/null; do sleep 0.1; done
    during=$(p99 "$client")
    wait "$ATTACK_PID" || die "hostile.py $what failed: $(tail -n 3 "$LOG/$server-$what.err")"
    ATTACK_PID=
    # The serve progress line comes every 5 s while its counters change.
    sleep 5.5
    logline=$(tail -c +"$((offset + 1))" "$LOG/$server.log" | grep -v '^$' | tail -n 1 | cut -c1-300 || true)
    python3 "$HOSTILE" row "$server" "$out" "$base" "$during" "${logline:-(nothing)}" | tee -a "$LOG/rows.md"
}

wanted() { [[ " $ATTACKS " == *" $1 "* ]]; }
is_proxy() { [[ $1 == socks5 || $1 == convert || $1 == ss ]]; }
is_line() { [[ $1 == control || $1 == barrier || $1 == x2x ]]; } # not HTTP: no smuggling
run_attacks() {
    local server=$1 proto=$2 client=$3 target=$4
    ! wanted none || attack "$server" "$proto" "$client" "$target" none --secs "$SECS" --procs 1
    ! wanted idle || attack "$server" "$proto" "$client" "$target" idle --conns "$IDLE" --secs "$LONG"
    ! wanted slowloris || attack "$server" "$proto" "$client" "$target" slowloris --conns "$SLOW" --secs "$LONG"
    ! wanted oversized || attack "$server" "$proto" "$client" "$target" oversized --secs "$SECS"
    ! wanted garbage || attack "$server" "$proto" "$client" "$target" garbage --secs "$SECS"
    # What queued for the non-readers takes a while to be dropped and given back.
    ! wanted halfopen || attack "$server" "$proto" "$client" "$target" halfopen --conns "$HALF" --secs "$SECS" --settle 20
    # The proxies' control for halfopen: the same upload from clients that read (not
    # Shadowsocks: random bytes relay nothing).
    if [[ $proto == socks5 || $proto == convert ]] && wanted relay; then
        attack "$server" "$proto" "$client" "$target" relay --conns "$HALF" --secs "$SECS"
    fi
    ! wanted flood || attack "$server" "$proto" "$client" "$target" flood --secs "$SECS"
    if [[ $proto != xmpp && $proto != h2 ]] && ! is_proxy "$proto" && ! is_line "$proto" && wanted smuggle; then
        attack "$server" "$proto" "$client" "$target" smuggle --procs 1
    fi
    # The gateways' sessions outlive their requests: IDLE of them made and abandoned.
    if [[ $proto == bosh || $proto == sockjs ]] && wanted sessions; then
        attack "$server" "$proto" "$client" "$target" sessions --conns "$IDLE" --secs "$SECS" --settle 20
    fi
    if is_proxy "$proto" && wanted disallowed; then
        attack "$server" "${DISALLOWED_PROTO:-$proto}" "$client" "${DISALLOWED_AT:-$target}" disallowed --procs 1
    fi
    if grep -n panicked "$LOG/$server.log"; then
        echo "| $server | **panicked**: see $LOG/$server.log | | | | | | |" | tee -a "$LOG/rows.md"
    fi
}

# ---------------------------------------------------------------- the proxies (#34)

# start_cmd NAME WANT CMD...: CMD, the server under attack.
start_cmd() {
    launch "$@"
    SERVER_PID=$LAUNCHED
}
# helper NAME WANT CMD...: a process the attacked server needs (the echo origin, the
# converter behind converter-client, ss-local), stopped at exit.
helper() {
    launch "$@"
    HELPER_PIDS="$HELPER_PIDS $LAUNCHED"
}
run_proxy() {
    # Below the ephemeral range (32768-60999): the proxies' own connections to the
    # origin leave TIME_WAITs on 127.0.0.1's ephemeral ports, which a bind there meets.
    local s=$1 port=$((20000 + RANDOM % 10000))
    if [[ -z ${OPORT:-} ]]; then
        OPORT=$((port - 1))
        if [[ ${ORIGIN:-wirebench} == python ]]; then
            helper echo "echo on" python3 "$HOSTILE" echo "$OPORT"
        else
            # Ours (serve --also direct, Rust): the origin's own cost stays small beside
            # the proxy's, on the CPU the proxy and the client share.
            helper echo "direct on" "$WB" serve --listen 127.0.0.1:0 --also "direct=127.0.0.1:$OPORT"
        fi
    fi
    PROXY_AT=127.0.0.1:$port
    DISALLOWED_PROTO='' DISALLOWED_AT=''
    case $s in
    socks5)
        PROXY_PROTO=socks5
        start_server socks5 "socks5 on" --also "socks5=$PROXY_AT"
        run_attacks socks5 socks5 proxy "$PROXY_AT"
        ;;
    ss)
        command -v ss-local >/dev/null || die "ss needs ss-local (shadowsocks-libev) for its well-behaved client"
        PROXY_PROTO=socks5 PROXY_AT=127.0.0.1:$((port + 1))
        start_server ss "shadowsocks on" --also "shadowsocks=127.0.0.1:$port"
        helper ss-local "listening at" ss-local -s 127.0.0.1 -p "$port" -b 127.0.0.1 \
            -l $((port + 1)) -k "${WIREBENCH_SHADOWSOCKS_PASSWORD:-wirebench}" -m chacha20-ietf-poly1305 -v
        DISALLOWED_PROTO=socks5 DISALLOWED_AT=$PROXY_AT
        run_attacks ss ss proxy "127.0.0.1:$port"
        ;;
    convert)
        PROXY_PROTO=convert
        start_cmd convert "listening on" "$WB" converter --listen "$PROXY_AT" --allow 127.0.0.1
        run_attacks convert convert proxy "$PROXY_AT"
        ;;
    cclient)
        PROXY_PROTO=socks5
        helper converter "listening on" "$WB" converter --listen "127.0.0.1:$((port + 2))" --allow 127.0.0.1
        start_cmd cclient "SOCKS5 on" "$WB" converter-client --listen "$PROXY_AT" \
            --via "127.0.0.1:$((port + 2))"
        run_attacks cclient socks5 proxy "$PROXY_AT"
        ;;
    esac
    stop_server
}

# ---- h1web: the BOSH and SockJS gateways and the SOAP, gRPC and WebSocket bench servers.
# web_server NAME: starts it (the gateways in front of the built-in server, all with
# their opening timeouts at HANDSHAKE), runs the attacks, stops it. CPORT is where the
# well-behaved client goes: BOSH's CORS preflight, SockJS's /info, a SOAP Echo envelope,
# 2-byte WebSocket echoes, unary gRPC Echo calls of 2 bytes (hostile.py http-client, ws-client,
# h2-client; CLIENT_SECS seconds each).
web_server() {
    local name=$1 port
    port=$((XPORT + 3))
    CPORT=$port
    case $name in
    bosh | sockjs)
        # Abandoned BOSH sessions end after HANDSHAKE, as SockJS's do after 5 s, so that
        # the sessions row sees their memory come back within its 20 s (60 s by default).
        BOSH_INACTIVITY=()
        [[ $name == bosh ]] && BOSH_INACTIVITY=(--xmpp-bosh-inactivity "$HANDSHAKE")
        start_server "$name" "XMPP over $([[ $name == bosh ]] && echo BOSH || echo SockJS)" \
            --xmpp "127.0.0.1:$XPORT" --xmpp-handshake-timeout "$HANDSHAKE" \
            "--xmpp-$name" "127.0.0.1:$port" --xmpp-web-opening-timeout "$HANDSHAKE" \
            ${BOSH_INACTIVITY[@]+"${BOSH_INACTIVITY[@]}"}
        run_attacks "$name" "$name" "$name" "127.0.0.1:$port"
        ;;
    soap | grpc | websocket)
        start_server "$name" "$name on" --also "$name=127.0.0.1:$port" --also-header-timeout "$HANDSHAKE"
        local proto=$name
        [[ $name == grpc ]] && proto=h2
        [[ $name == websocket ]] && proto=wsecho
        run_attacks "$name" "$proto" "$name" "127.0.0.1:$port"
        ;;
    esac
    stop_server
}
web_client() {
    case $1 in
    bosh | sockjs | soap) python3 "$HOSTILE" http-client "127.0.0.1:$CPORT" "$CLIENT_SECS" "$1" ;;
    websocket) python3 "$HOSTILE" ws-client "127.0.0.1:$CPORT" "$CLIENT_SECS" ;;
    grpc) python3 "$HOSTILE" h2-client "127.0.0.1:$CPORT" "$CLIENT_SECS" ;;
    esac
}
# ---- end of h1web's block

# ---- h1ctl: serve's control port, the shard barrier, the x2x link listener.
# wait_port PORT: until something listens on 127.0.0.1:PORT (shard 0 says nothing when
# its barrier is up).
wait_port() {
    for _ in $(seq 400); do
        python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 1).close()" "$1" 2>/dev/null && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || die "nothing listens on $1; see $LOG"
        sleep 0.05
    done
    die "nothing listens on 127.0.0.1:$1; see $LOG"
}
# shard_args I: a 2-shard load run's shard I against the built-in server on XPORT.
shard_args() {
    echo run --protocol xmpp --workload load --payload 32 --load-phases 2s@50/s --load-stay 1s \
        --load-target "127.0.0.1:$XPORT" --shard "$1/2" --barrier "127.0.0.1:$BPORT" \
        --barrier-timeout 30m --no-report --yes --out "$LOG/shard-$1"
}
ctl_server() {
    local name=$1 port=$((XPORT + 5))
    CLIENT_AT=127.0.0.1:$port
    case $name in
    control)
        start_cmd control "control port listening" "$WB" serve --listen "$CLIENT_AT"
        run_attacks control control control "$CLIENT_AT"
        ;;
    barrier)
        BPORT=$port
        helper target "XMPP layout" "$WB" serve --listen 127.0.0.1:0 --xmpp "127.0.0.1:$XPORT"
        # shellcheck disable=SC2046 # the words of shard_args
        "$WB" $(shard_args 0) >"$LOG/barrier.log" 2>&1 &
        SERVER_PID=$!
        wait_port "$port"
        run_attacks barrier barrier barrier "$CLIENT_AT"
        local t0=$SECONDS rc=0
        # shellcheck disable=SC2046
        timeout 120 "$WB" $(shard_args 1) >"$LOG/shard-1.log" 2>&1 || rc=$?
        wait "$SERVER_PID" || rc=$((rc + 100))
        SERVER_PID=
        if ((rc == 0)); then
            echo "| barrier | a real shard 1, after the attacks | | | | | joined; both shards ran the case and exited 0 ($((SECONDS - t0)) s) | |" | tee -a "$LOG/rows.md"
        else
            echo "| barrier | a real shard 1, after the attacks | | | | | **failed** (shard 1's status, plus 100 if shard 0 failed: $rc): $(tail -n 1 "$LOG/shard-1.log" | tr -d '|' | cut -c1-160) | |" | tee -a "$LOG/rows.md"
        fi
        ;;
    x2x)
        cat >"$LOG/x2x.toml" <<EOF
name = "hostile"
local_domains = ["a.test"]
remote_domains = ["b.test"]
log = "info"
[link]
listen = "$CLIENT_AT"
peer = "127.0.0.1:$((port + 1))"
dial = "peer"
compression = "none"
tfo = false
[component]
address = "127.0.0.1:9"
secret = "hostile"
EOF
        start_cmd x2x "listen" "$WB" x2x --config "$LOG/x2x.toml"
        run_attacks x2x x2x x2x "$CLIENT_AT"
        ;;
    esac
    stop_server
}
# ---- end of h1ctl's block

echo "# bench/hostile.sh${*:+ $*} on $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs; logs in $LOG"
echo
echo "| server | attack | RSS before / peak / after, MiB | per conn, KiB | client p99 without / during, us (ratio) | alive | what the attack saw | the server's last log line |"
echo "|---|---|---|---|---|---|---|---|"
# Below the ephemeral range (32768-60999), where a busy machine's outgoing connections
# may hold the port already.
XPORT=$((20000 + RANDOM % 10000))
for s in "${SERVERS[@]}"; do
    case $s in
    xmpp)
        start_server xmpp "XMPP layout" --xmpp "127.0.0.1:$XPORT" --xmpp-handshake-timeout "$HANDSHAKE"
        run_attacks xmpp xmpp xmpp "127.0.0.1:$XPORT"
        stop_server
        ;;
    ws)
        WPORT=$((XPORT + 1))
        start_server ws "WebSocket" --xmpp "127.0.0.1:$XPORT" --xmpp-handshake-timeout "$HANDSHAKE" \
            --xmpp-websocket "127.0.0.1:$WPORT" --xmpp-web-opening-timeout "$HANDSHAKE"
        run_attacks ws ws xmpp "127.0.0.1:$WPORT"
        stop_server
        ;;
    http)
        HPORT=$((XPORT + 2))
        start_server http "http" --also "http=127.0.0.1:$HPORT" --also-header-timeout "$HANDSHAKE"
        run_attacks http http http "127.0.0.1:$HPORT"
        stop_server
        ;;
    socks5 | ss | convert | cclient) run_proxy "$s" ;;
    control | barrier | x2x) ctl_server "$s" ;;
    *) web_server "$s" ;; # h1web's block below
    esac
done
python3 "$HOSTILE" verdict "$LOG/rows.md"
