#!/usr/bin/env bash
# CPU time per XMPP login of the built-in server and of the client, on loopback: a steadier
# figure than logins per second when other work shares the machine.
#
#   bench/xmpp-login-cpu.sh [--help]
#
# Starts `wirebench serve --xmpp --xmpp-workers WORKERS`, logs SESSIONS sessions in with
# the `hold_sessions` example (PLAIN, no TLS, 512 in flight, its own source address), and
# prints the server's CPU (user + system, /proc/PID/stat) and the client's (time(1)) per
# login, REPEATS times. Both include the kernel's loopback TCP work for their side.
#
# Environment: SESSIONS (default 16000), WORKERS (default 2), REPEATS (default 3), WB
# (wirebench binary, built if missing).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case ${1:-} in
--help | -h)
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
"") ;;
*)
    echo "xmpp-login-cpu.sh: unknown argument $1 (try --help)" >&2
    exit 2
    ;;
esac
: "${SESSIONS:=16000}" "${WORKERS:=2}" "${REPEATS:=3}"
die() {
    echo "xmpp-login-cpu.sh: $*" >&2
    exit 1
}
[[ -x /usr/bin/time ]] || die "/usr/bin/time is missing: apt-get install -y time"
# Two builds: with --example, cargo builds only that target of every package named.
(cd "$REPO" && cargo build --release -q -p wirebench && cargo build --release -q -p wirebench-xmpp-load --example hold_sessions) ||
    die "cargo build failed"
WB=${WB:-$REPO/target/release/wirebench}
HOLD=$REPO/target/release/examples/hold_sessions
LOG=$(mktemp -d /tmp/wirebench-login-cpu.XXXXXX)
SERVER_PID=
cleanup() {
    if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
for ((i = 1; i <= REPEATS; i++)); do
    port=$((40000 + RANDOM % 20000))
    "$WB" serve --quiet --listen 127.0.0.1:0 --xmpp "127.0.0.1:$port" --xmpp-workers "$WORKERS" \
        --xmpp-users "$SESSIONS" >"$LOG/server-$i.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 100); do
        grep -q "XMPP layout" "$LOG/server-$i.log" && break
        kill -0 "$SERVER_PID" 2>/dev/null || die "server did not start: $(cat "$LOG/server-$i.log")"
        sleep 0.05
    done
    sleep 0.5
    s0=$(ticks "$SERVER_PID")
    /usr/bin/time -f "%U %S" -o "$LOG/time-$i" "$HOLD" "127.0.0.1:$port" wirebench.test "$SESSIONS" \
        --hold 0 --from "127.0.4.$i" >"$LOG/client-$i.log" 2>&1 || die "client failed: $(cat "$LOG/client-$i.log")"
    s1=$(ticks "$SERVER_PID")
    cleanup
    read -r cu cs <"$LOG/time-$i"
    awk -v s=$((s1 - s0)) -v hz="$HZ" -v cu="$cu" -v cs="$cs" -v n="$SESSIONS" -v i="$i" \
        -v line="$(grep '^established' "$LOG/client-$i.log")" \
        'BEGIN { printf "  [%d] %s | server %.1f us/login, client %.1f us/login\n", i, line, s / hz * 1e6 / n, (cu + cs) * 1e6 / n }'
done
echo "   logs: $LOG"
