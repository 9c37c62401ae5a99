#!/usr/bin/env bash
# wirebench's MQTT session load against Tsung 1.7's (issue #51): the same arrivals and
# session script against the same broker configuration, one after the other in one run,
# each generator's memory and CPU measured the same way.
#
#   bench/mqtt-load.sh [--quick] [--help]
#
# The broker: Mosquitto with the configuration wirebench's load gives it
# (docs/load.md: anonymous, no persistence, no connection cap,
# Nagle off, errors only in its log), on 127.0.0.1. wirebench's case starts its own; Tsung
# gets one started here the same way. The script, for each of SESSIONS sessions arriving
# at RATE a second (Poisson): connect (CONNECT, CONNACK), subscribe to a topic of its own
# at QoS 1 (SUBSCRIBE, SUBACK), hold the session, leave (DISCONNECT) STAY after arriving.
# No messages: what is compared is what a session costs its generator. Tsung's MQTT is
# 3.1.1 (ts_mqtt); wirebench runs mqtt.version=3.1.1.
#
# Prints, for each generator and as a ratio:
#   sessions started, subscribed (SUBACK), held at once, failures
#   generator memory at the peak: total, per session held, sessions per GiB
#   generator CPU per session (the whole run's CPU / sessions subscribed)
#   CONNACK latency: Tsung's mean from its send; wirebench's mean, p50 and p99 from the
#   session's intended start
#
# Memory and CPU come from bench/lib/proc-usage.py, which samples every process carrying
# this run's WB_BENCH_TAG twice a second (Tsung's VMs detach from their parent); for
# wirebench it leaves out the Mosquitto the case starts (the broker is not the
# generator). Tsung's figures from the tsung.log it writes under OUT.
#
# Environment: SESSIONS (default 10000, --quick 2000), RATE (arrivals/s, default 1000,
# --quick 500), HOLD (seconds all are held after the last arrival; default 20, --quick 5),
# PER_VM (Tsung sessions per VM, default 15000), WB (wirebench binary, built if missing),
# OUT (a directory for both runs' results; default a new one under /tmp).
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
        echo "mqtt-load.sh: unknown argument $a (try --help)" >&2
        exit 2
        ;;
    esac
done
if ((QUICK)); then
    : "${SESSIONS:=2000}" "${RATE:=500}" "${HOLD:=5}"
else
    : "${SESSIONS:=10000}" "${RATE:=1000}" "${HOLD:=20}"
fi
: "${PER_VM:=15000}"
die() {
    echo "mqtt-load.sh: $*" >&2
    exit 1
}
for t in tsung epmd mosquitto jq python3; do
    command -v $t >/dev/null || die "$t is missing (Debian: apt-get install -y tsung mosquitto jq)"
done
WB=${WB:-$REPO/target/release/wirebench}
if [[ ! -x $WB ]]; then
    (cd "$REPO" && cargo build --release -p wirebench) || die "cargo build failed"
fi
OUT=${OUT:-$(mktemp -d /tmp/wirebench-mqtt-load.XXXXXX)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

RAMP=$(((SESSIONS + RATE - 1) / RATE))
STAY=$((RAMP + HOLD))
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
TAG=wbmqtt$$

# shellcheck source=bench/lib/tsung.sh
source "$REPO/bench/lib/tsung.sh"
trap tsung_cleanup EXIT
trap 'exit 130' INT TERM

echo "== $SESSIONS sessions at $RATE/s (ramp ${RAMP}s), each held ${STAY}s; results in $OUT"

# --- Tsung ----------------------------------------------------------------------------
PORT=$(free_port)
mkdir -p "$OUT/tsung"
cat >"$OUT/tsung/mosquitto.conf" <<EOF
listener $PORT 127.0.0.1
allow_anonymous true
persistence false
max_connections -1
set_tcp_nodelay true
log_dest file $OUT/tsung/mosquitto.log
log_type error
log_type warning
connection_messages false
user root
EOF
mosquitto -c "$OUT/tsung/mosquitto.conf" >"$OUT/tsung/mosquitto.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do
    (: </dev/tcp/127.0.0.1/"$PORT") 2>/dev/null && break
    sleep 0.1
done
(: </dev/tcp/127.0.0.1/"$PORT") 2>/dev/null || die "mosquitto did not start: $(cat "$OUT/tsung/mosquitto.out")"

# Its VMs find each other through epmd: one of ours on a free port, stopped on exit.
EPMD_PORT=$(free_port)
epmd -port "$EPMD_PORT" >"$OUT/epmd.log" 2>&1 &
PIDS+=($!)
HOST=$(hostname -s)
# One source address per 20,000 sessions (127.0.3.k), as tsung.sh: from one address Tsung
# runs out of ephemeral ports near 28,000. The phase is 20 s longer than RATE needs,
# stopped at SESSIONS (Tsung's maxnumber, wirebench's max=), as tsung.sh.
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
  <sessions>
    <session probability="100" name="wirebench-script" type="ts_mqtt">
      <transaction name="connack">
        <request> <mqtt type="connect" clean_start="true" keepalive="60"/> </request>
      </transaction>
      <transaction name="suback">
        <request subst="true"> <mqtt type="subscribe" topic="wb/%%_tsung_userid%%" qos="1"/> </request>
      </transaction>
      <thinktime value="$STAY" random="false"/>
      <request> <mqtt type="disconnect"/> </request>
    </session>
  </sessions>
</tsung>
EOF
echo "== Tsung ($(dpkg-query -W -f='${Version}' tsung 2>/dev/null || echo '?'), VMs of $PER_VM sessions)"
measured tsung "" env HOME="$OUT/tsung" ERL_EPMD_PORT="$EPMD_PORT" \
    tsung -n -f "$OUT/tsung/tsung.xml" -l "$OUT/tsung/log" start >"$OUT/tsung/tsung.out" 2>&1 ||
    echo "mqtt-load.sh: Tsung ended with an error (see $OUT/tsung/tsung.out)" >&2
tlogs=("$OUT"/tsung/log/*/)
TLOG=${tlogs[-1]}tsung.log
[[ -s $TLOG ]] || die "Tsung wrote no tsung.log (see $OUT/tsung/tsung.out)"

# --- wirebench ------------------------------------------------------------------------
echo "== wirebench"
measured wirebench mosquitto "$WB" run --protocol mqtt --workload load --payload 64 \
    --mqtt-version 3.1.1 --mqtt-qos 1 \
    --load-phases "$((RAMP + 20))s@${RATE}/s:max=${SESSIONS}" --load-arrivals poisson \
    --load-stay "${STAY}s" --load-every 0 --load-timeout 60s --yes \
    --out "$OUT/wirebench" >"$OUT/wirebench.out" 2>&1 ||
    echo "mqtt-load.sh: wirebench ended with an error (see $OUT/wirebench.out)" >&2
REC=$OUT/wirebench/results.jsonl
[[ -s $REC ]] || die "wirebench wrote no record (see $OUT/wirebench.out)"

# --- figures --------------------------------------------------------------------------
terrors=$(tsung_errors)

python3 - "$REPO/bench/lib" <<EOF
import sys
sys.path.insert(0, sys.argv[1])
from versus import costs, header, per_session, row
t = dict(
    started=$(ts users_count max2), subscribed=$(ts tr_suback count), held=$(ts users max2),
    failed=$terrors, rss_kib=$(u tsung peak_rss_kib), cpu=$(u tsung cpu_s), procs=$(u tsung processes),
    connack_mean_ms=$(ts tr_connack mean),
)
w = dict(
    started=float("$(m load.sessions)" or 0), subscribed=float("$(m load.logged_in)" or 0),
    held=float("$(m load.peak_active)" or 0), failed=float("$(m load.failed)" or 0),
    rss_kib=$(u wirebench peak_rss_kib), cpu=$(u wirebench cpu_s), procs=$(u wirebench processes),
    connack_mean_ms=float("$(m load.connect.mean)" or 0) * 1e3,
    connack_p50_ms=float("$(m load.connect.p50)" or 0) * 1e3,
    connack_p99_ms=float("$(m load.connect.p99)" or 0) * 1e3,
)
for g in (t, w):
    per_session(g, "subscribed")

header()
row("sessions started", t["started"], w["started"], "{:,.0f}")
row("subscribed (SUBACK)", t["subscribed"], w["subscribed"], "{:,.0f}")
row("held at once", t["held"], w["held"], "{:,.0f}")
row("failures", t["failed"], w["failed"], "{:,.0f}")
costs(t, w)
row("CONNACK mean (ms)", t["connack_mean_ms"], w["connack_mean_ms"], "{:,.2f}")
print(f"  wirebench CONNACK p50 {w['connack_p50_ms']:.2f} ms, p99 {w['connack_p99_ms']:.2f} ms (from intended start; Tsung has no percentiles)")
print("  ratios: Tsung / wirebench for costs, wirebench / Tsung for sessions per GiB")
EOF
echo "== details: $OUT (tsung/, wirebench/, *.usage.json)"
