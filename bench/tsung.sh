#!/usr/bin/env bash
# wirebench's session load generator against Tsung 1.7 (issue #14): the same arrivals and
# session script, against the same server, one after the other in one run, with the
# generators' memory and CPU measured the same way for both.
#
#   bench/tsung.sh [--quick] [--help]
#
# The server: wirebench's built-in XMPP server (`wirebench serve --xmpp`), started once,
# accounts user<N>/pass<N>, empty rosters. The script, for each of SESSIONS sessions
# arriving at RATE a second: connect, SASL PLAIN, bind, session, roster get, initial
# presence; THINK later one chat message; leave STAY after arriving. Tsung runs as its own
# controller and VMs of at most PER_VM sessions each (open files are capped at 20,000 per
# process here; wirebench's generator processes hold 15,000 each, so the default is the
# same); wirebench runs `wirebench run --workload load --load-target` at the same server.
#
# Prints, for each generator and as a ratio:
#   sessions started, logged in, held at once, failures
#   generator memory at the peak (every process of the generator, controller included):
#     total, per session held, sessions per GiB       issue #14 target: >= 5x Tsung's
#   generator CPU per session (login, message, leaving; the whole run's CPU / sessions)
#   login latency: Tsung gives means only (connect, authenticate, roster: summed here);
#     wirebench's mean, p50 and p99 from the session's intended start
#
# Memory and CPU come from bench/lib/proc-usage.py, which samples every process carrying
# this run's WB_BENCH_TAG twice a second (Tsung's VMs detach from their parent, so a
# process tree would miss them). Tsung's figures in the tsung.log it writes under OUT.
#
# Environment: SESSIONS (default 30000, --quick 4000), RATE (arrivals/s, default 1000,
# --quick 500), HOLD (seconds all are held after the last arrival; default 30, --quick
# 10), PER_VM (Tsung sessions per VM, default 15000), WB (wirebench binary, built if
# missing), OUT (a directory for both runs' results; default a new one under /tmp).
# Traffic stays on 127.0.0.1; everything started here is stopped on exit or Ctrl-C.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
QUICK=0
for a in "$@"; do
    case $a in
    --quick) QUICK=1 ;;
    --help | -h)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "tsung.sh: unknown argument $a (try --help)" >&2
        exit 2
        ;;
    esac
done
if ((QUICK)); then
    : "${SESSIONS:=4000}" "${RATE:=500}" "${HOLD:=10}"
else
    : "${SESSIONS:=30000}" "${RATE:=1000}" "${HOLD:=30}"
fi
: "${PER_VM:=15000}"
die() {
    echo "tsung.sh: $*" >&2
    exit 1
}
for t in tsung epmd jq python3; do
    command -v $t >/dev/null || die "$t is missing (Debian: apt-get install -y tsung jq; bash scripts/install-interop.sh installs Tsung)"
done
WB=${WB:-$REPO/target/release/wirebench}
if [[ ! -x $WB ]]; then
    (cd "$REPO" && cargo build --release -p wirebench) || die "cargo build failed"
fi
OUT=${OUT:-$(mktemp -d /tmp/wirebench-tsung.XXXXXX)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

RAMP=$(((SESSIONS + RATE - 1) / RATE))
THINK=$((RAMP + HOLD / 2))
STAY=$((RAMP + HOLD))
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
TAG=wbtsung$$

# shellcheck source=bench/lib/tsung.sh
source "$REPO/bench/lib/tsung.sh"
trap tsung_cleanup EXIT
trap 'exit 130' INT TERM

echo "== $SESSIONS sessions at $RATE/s (ramp ${RAMP}s), a message at ${THINK}s, leaving at ${STAY}s; results in $OUT"
"$WB" serve --listen 127.0.0.1:0 --quiet --xmpp "127.0.0.1:$PORT" --xmpp-users "$SESSIONS" \
    --xmpp-contacts 0 --xmpp-sessions $((SESSIONS + SESSIONS / 10 + 100)) >"$OUT/serve.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do
    (: </dev/tcp/127.0.0.1/"$PORT") 2>/dev/null && break
    sleep 0.1
done
(: </dev/tcp/127.0.0.1/"$PORT") 2>/dev/null || die "the server did not start: $(cat "$OUT/serve.log")"
grep "layout" "$OUT/serve.log" | sed 's/^wirebench serve: /   server: /'

# --- Tsung ----------------------------------------------------------------------------
# Its VMs find each other through epmd: one of ours on a free port, stopped on exit
# (Tsung would otherwise start a system-wide one that outlives the run).
EPMD_PORT=$(free_port)
epmd -port "$EPMD_PORT" >"$OUT/epmd.log" 2>&1 &
PIDS+=($!)
HOST=$(hostname -s)
mkdir -p "$OUT/tsung"
# Source addresses: one per 20,000 sessions (127.0.3.k), as wirebench gives each of its
# generator processes its own (127.0.1.k): from one address Tsung runs out of ephemeral
# ports near 28,000 sessions (error_connect_eaddrinuse).
# Both generators get a phase 20 s longer than RATE needs, stopped at SESSIONS (Tsung's
# maxnumber, wirebench's max=): Tsung's phase clock starts before its first VM is up, and
# Poisson arrivals can fall short of RATE x RAMP.
cat >"$OUT/tsung/tsung.xml" <<EOF
<?xml version="1.0"?>
<!DOCTYPE tsung SYSTEM "/usr/share/tsung/tsung-1.0.dtd">
<tsung loglevel="warning" version="1.0">
  <clients>
    <client host="$HOST" use_controller_vm="false" maxusers="$PER_VM">
$(for ((k = 1; k <= SESSIONS / 20000 + 1; k++)); do echo "      <ip value=\"127.0.3.$k\"/>"; done)
    </client>
  </clients>
  <servers>
    <server host="127.0.0.1" port="$PORT" type="tcp"/>
  </servers>
  <load duration="$((RAMP + STAY + 120))" unit="second">
    <arrivalphase phase="1" duration="$((RAMP + 20))" unit="second">
      <users maxnumber="$SESSIONS" arrivalrate="$RATE" unit="second"/>
    </arrivalphase>
  </load>
  <options>
    <option type="ts_jabber" name="global_number" value="$SESSIONS"/>
    <option type="ts_jabber" name="userid_max" value="$SESSIONS"/>
    <option type="ts_jabber" name="domain" value="wirebench.test"/>
    <option type="ts_jabber" name="username" value="user"/>
    <option type="ts_jabber" name="passwd" value="pass"/>
  </options>
  <sessions>
    <session probability="100" name="wirebench-script" type="ts_jabber">
      <request> <jabber type="connect" ack="local"/> </request>
      <transaction name="authenticate">
        <request> <jabber type="auth_sasl" ack="local"/> </request>
        <request> <jabber type="connect" ack="local"/> </request>
        <request> <jabber type="auth_sasl_bind" ack="local"/> </request>
        <request> <jabber type="auth_sasl_session" ack="local"/> </request>
      </transaction>
      <transaction name="roster">
        <request> <jabber type="iq:roster:get" ack="local"/> </request>
      </transaction>
      <request> <jabber type="presence:initial" ack="no_ack"/> </request>
      <thinktime value="$THINK" random="false"/>
      <request> <jabber type="chat" ack="no_ack" size="32" destination="online"/> </request>
      <thinktime value="$((STAY - THINK))" random="false"/>
      <request> <jabber type="close" ack="no_ack"/> </request>
    </session>
  </sessions>
</tsung>
EOF
echo "== Tsung ($(dpkg-query -W -f='${Version}' tsung 2>/dev/null || echo '?'), VMs of $PER_VM sessions)"
measured tsung "" env HOME="$OUT/tsung" ERL_EPMD_PORT="$EPMD_PORT" \
    tsung -n -f "$OUT/tsung/tsung.xml" -l "$OUT/tsung/log" start >"$OUT/tsung/tsung.out" 2>&1 ||
    echo "tsung.sh: Tsung ended with an error (see $OUT/tsung/tsung.out)" >&2
# Tsung names its log directory by the start time: the last in glob order is this run's.
tlogs=("$OUT"/tsung/log/*/)
TLOG=${tlogs[-1]}tsung.log
[[ -s $TLOG ]] || die "Tsung wrote no tsung.log (see $OUT/tsung/tsung.out)"

# --- wirebench ------------------------------------------------------------------------
echo "== wirebench"
measured wirebench "" "$WB" run --protocol xmpp --workload load --payload 32 \
    --load-target "127.0.0.1:$PORT" \
    --load-phases "$((RAMP + 20))s@${RATE}/s:max=${SESSIONS}" --load-arrivals poisson \
    --load-stay "${STAY}s" --load-think "${THINK}s" --load-every "$((STAY + 1))s" \
    --load-contacts 0 --load-timeout 60s --yes --out "$OUT/wirebench" >"$OUT/wirebench.out" 2>&1 ||
    echo "tsung.sh: wirebench ended with an error (see $OUT/wirebench.out)" >&2
REC=$OUT/wirebench/results.jsonl
[[ -s $REC ]] || die "wirebench wrote no record (see $OUT/wirebench.out)"

# --- figures --------------------------------------------------------------------------
terrors=$(tsung_errors)

python3 - "$SESSIONS" "$REPO/bench/lib" <<EOF
import sys
sessions = int(sys.argv[1])
sys.path.insert(0, sys.argv[2])
from versus import costs, header, per_session, row
t = dict(
    started=$(ts users_count max2), logged=$(ts tr_authenticate count), held=$(ts users max2),
    failed=$terrors, rss_kib=$(u tsung peak_rss_kib), cpu=$(u tsung cpu_s), procs=$(u tsung processes),
    login_mean_ms=$(ts connect mean) + $(ts tr_authenticate mean) + $(ts tr_roster mean),
    login_max_ms=$(ts tr_authenticate max),
)
w = dict(
    started=float("$(m load.sessions)" or 0), logged=float("$(m load.logged_in)" or 0), held=float("$(m load.peak_active)" or 0),
    failed=float("$(m load.failed)" or 0), rss_kib=$(u wirebench peak_rss_kib), cpu=$(u wirebench cpu_s),
    procs=$(u wirebench processes),
    login_mean_ms=float("$(m load.login.mean)" or 0) * 1e3, login_p50_ms=float("$(m load.login.p50)" or 0) * 1e3,
    login_p99_ms=float("$(m load.login.p99)" or 0) * 1e3, login_max_ms=float("$(m load.login.max)" or 0) * 1e3,
)
for g in (t, w):
    per_session(g, "logged")

header()
row("sessions started", t["started"], w["started"], "{:,.0f}")
row("logged in", t["logged"], w["logged"], "{:,.0f}")
row("held at once", t["held"], w["held"], "{:,.0f}")
row("failures", t["failed"], w["failed"], "{:,.0f}")
costs(t, w, "  sessions per GiB (target: >= 5x)")
row("login mean (ms)", t["login_mean_ms"], w["login_mean_ms"], "{:,.2f}")
row("login max (ms)", t["login_max_ms"], w["login_max_ms"], "{:,.1f}")
print(f"  wirebench login p50 {w['login_p50_ms']:.2f} ms, p99 {w['login_p99_ms']:.2f} ms (from intended start; Tsung has no percentiles)")
print("  ratios: Tsung / wirebench for costs, wirebench / Tsung for sessions per GiB")
print("  Tsung's login: connect + authenticate + roster means, each from its own send; its max: authenticate alone")
EOF
echo "== details: $OUT (tsung/, wirebench/, *.usage.json, serve.log)"
