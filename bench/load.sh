#!/usr/bin/env bash
# The million (issue #14): SESSIONS concurrent XMPP sessions against the built-in server,
# generator and server on this machine, ramped open-loop at RATE arrivals a second and
# then all held for HOLD seconds.
#
#   bench/load.sh [--quick | --scales] [--help]
#
# Runs `wirebench run --protocol xmpp --workload load` (docs/load.md) with empty rosters,
# initial presence, no messages unless EVERY is set, uniform arrivals, and prints from its
# record and time series:
#   sessions held at once and for how long            target: 1,000,000 for 600 s
#   failures by cause                                 target: 0
#   logins/s during the ramp (mean and slowest second) target: >= 10,000
#   login p50/p99/max from the intended start
#   generator and server memory per session            target (generator): <= 4 KiB
#   CPU per login on each side, user and kernel, over the login phase (the schedule's
#   start to the last login), each side by its own processes' CPU clocks, and the
#   logins/s that phase ran at                         target: sum <= 200 us at 1,000,000
# The run checks memory, open files (fs.file-max) and the kernel's connection tracking
# up front, from what a session was measured to need (generator 1.55 KiB, server 0.90 KiB,
# kernel 3.3 KiB a socket, two sockets a session: about 9 KiB), says what it needs, and
# refuses a peak that does not fit (2,000,000 need about 19 GiB and 4,010,000 open
# files: sysctl -w fs.file-max=4200000 first). Everything stays
# on 127.0.0.0/8; it stops by itself (Ctrl-C ends it early, keeping what was measured).
#
# --scales runs one case per scale in SCALES (default "10000 100000 1000000"), each held
# HOLD s (default 10), and ends with a table of CPU per login by side, user and kernel,
# and the ramp's logins/s at each scale, with the limit as its last two rows: a PLAIN
# login's bytes and round trips (roster fetch included, as the runs do) between two
# minimal C programs, one epoll loop each (bench/lib/login-limit.c, LIMIT_SESSIONS
# sessions, default 10,000), paced at RATE logins a second like the runs, then flat
# out. LIMIT_SCALE=N adds the limit holding N connections as the runs do at their top
# (N / LIMIT_SESSIONS pairs of it, one after another at RATE, each pair from its own
# source address and holding its connections until the last is done; about 7 KiB of
# kernel memory a session): the first pair's CPU per login and the last tenth's, so what
# the kernel's own cost does with scale is seen apart from ours. One scale:
# SESSIONS=N.
#
# Environment: SESSIONS (default 1000000, --quick 100000), RATE (arrivals/s, default
# 5000), HOLD (seconds every session is held once all have arrived; default 600, --quick
# 30), EVERY (a message to the partner this often, e.g. 60s; default 0: none), CONTACTS
# (roster entries per user; default 0), ONLINE (all, or half: every other user logs in, so
# half of each roster is online; default all), WB (wirebench binary, built if missing),
# OUT (results directory; default a new one under /tmp).
#
# Study S4's second configuration, 300,000 sessions with 50-entry rosters, half online,
# a message a minute, held 10 minutes:
#   SESSIONS=300000 RATE=2000 CONTACTS=50 ONLINE=half EVERY=60s bench/load.sh
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
QUICK=0
SCALED=0
for a in "$@"; do
    case $a in
    --quick) QUICK=1 ;;
    --scales) SCALED=1 ;;
    --help | -h)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "load.sh: unknown argument $a (try --help)" >&2
        exit 2
        ;;
    esac
done
# limit_at_scale N RATE: the limit holding N connections, as the runs do at their top: N /
# LIMIT_SESSIONS pairs of login-limit, one after the other at RATE logins a second, each
# from its own source address and holding its connections until the last pair is done.
# Prints the first pair's CPU per login and the mean of the last tenth's, each side.
limit_at_scale() {
    local n=$1 rate=$2 k port src pairs pids=() log=$BASE/limit-scale
    pairs=$(((n + LIMIT_SESSIONS - 1) / LIMIT_SESSIONS))
    # Checked up front: 7 KiB of kernel memory and two open files a session.
    local avail_kib files_max
    avail_kib=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
    files_max=$(cat /proc/sys/fs/file-max)
    if ((avail_kib < n * 7 * 12 / 10 || files_max < 2 * n + 10000)); then
        echo "load.sh: the limit holding $n needs about $((n * 7 / 1024)) MiB of memory and $((2 * n)) open files (available: $((avail_kib / 1024)) MiB, fs.file-max $files_max): skipped" >&2
        return
    fi
    mkdir -p "$log"
    # Every pair, and the server each forks (it dies with its client), ends with the run.
    trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null' EXIT
    for ((k = 0; k < pairs; k++)); do
        port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        src=127.1.$((k / 250)).$((k % 250 + 1))
        "$BASE/login-limit" "$port" "$LIMIT_SESSIONS" 512 "$rate" "$src" 36000 >"$log/pair-$k.txt" 2>&1 &
        pids+=($!)
        # The next pair starts when this one's logins are done (its two lines are out).
        until [[ $(grep -c 'per login' "$log/pair-$k.txt" 2>/dev/null) == 2 ]]; do
            kill -0 "${pids[-1]}" 2>/dev/null || { echo "load.sh: limit pair $k failed: $(cat "$log/pair-$k.txt")" >&2; return; }
            sleep 0.2
        done
    done
    awk -v pairs="$pairs" -v n="$n" -v per="$LIMIT_SESSIONS" -v rate="$rate" '
        FNR == 1 { k = FILENAME; sub(/.*pair-/, "", k); sub(/\.txt$/, "", k); k += 0 }
        / client / { cu[k] = $4; cs[k] = $7; r[k] = $NF }
        / server / { su[k] = $4; ss[k] = $7 }
        END {
            top = int(pairs / 10); if (top < 1) top = 1
            for (k = pairs - top; k < pairs; k++) { tcu += cu[k]; tcs += cs[k]; tsu += su[k]; tss += ss[k] }
            tcu /= top; tcs /= top; tsu /= top; tss /= top
            printf "| limit, the first %d of %d held (login-limit.c pairs at %d/s) | %.1f + %.1f = %.1f | %.1f + %.1f = %.1f | %.1f | %s | 0 |\n",
                per, n, rate, cu[0], cs[0], cu[0] + cs[0], su[0], ss[0], su[0] + ss[0], cu[0] + cs[0] + su[0] + ss[0], r[0]
            printf "| limit, the last %d of %d held (mean of %d pairs) | %.1f + %.1f = %.1f | %.1f + %.1f = %.1f | %.1f | %s | 0 |\n",
                top * per, n, top, tcu, tcs, tcu + tcs, tsu, tss, tsu + tss, tcu + tcs + tsu + tss, r[pairs - 1]
        }' "$log"/pair-*.txt
    kill "${pids[@]}" 2>/dev/null
    wait 2>/dev/null
    trap - EXIT
}

if ((SCALED)); then
    : "${SCALES:=10000 100000 1000000}" "${HOLD:=10}"
    BASE=${OUT:-$(mktemp -d /tmp/wirebench-load.XXXXXX)}
    for n in $SCALES; do
        [[ $n =~ ^[1-9][0-9]*$ ]] || {
            echo "load.sh: SCALES holds session counts (got '$n')" >&2
            exit 2
        }
    done
    for n in $SCALES; do
        SESSIONS=$n HOLD=$HOLD OUT=$BASE/s$n bash "${BASH_SOURCE[0]}" || echo "load.sh: the $n-session run failed" >&2
    done
    echo ""
    echo "== CPU per login by side (us: user + kernel = total) and the ramp's logins/s; results in $BASE"
    printf '| sessions | generator | server | both | logins/s (ramp) | failed |\n|---:|---|---|---:|---:|---:|\n'
    for n in $SCALES; do
        rec=$BASE/s$n/results.jsonl
        [[ -s $rec ]] || { printf '| %s | not run | | | | |\n' "$n"; continue; }
        # Logins in the intervals whose arrivals were all scheduled, per second.
        rate=$(awk -F, -v ramp="$(((n + ${RATE:-5000} - 1) / ${RATE:-5000}))" 'FNR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
            $c["seconds"] <= ramp { k++; s += $c["logins"] } END { if (k) printf "%.0f", s / k; else print "-" }' "$BASE/s$n/case-0001-r1.load.csv" 2>/dev/null || echo -)
        jq -r --arg n "$n" --arg rate "$rate" 'select(.metrics) | .metrics as $m
            | def v($k): ($m[$k].value // null);
              def us($x): if $x == null then "-" else ($x * 1e6 * 10 | round / 10 | tostring) end;
              def side($s): if v("\($s).cpu_user_per_login") == null then "not measured"
                  else "\(us(v("\($s).cpu_user_per_login"))) + \(us(v("\($s).cpu_sys_per_login"))) = \(us(v("\($s).cpu_user_per_login") + v("\($s).cpu_sys_per_login")))" end;
              "| \($n) | \(side("generator")) | \(side("server")) | \(us((v("generator.cpu_user_per_login") // 0) + (v("generator.cpu_sys_per_login") // 0) + (v("server.cpu_user_per_login") // 0) + (v("server.cpu_sys_per_login") // 0))) | \($rate) | \(v("load.failed") // "-") |"' "$rec" | tail -n 1
    done
    # The limit: the same login's bytes and round trips between two one-epoll C
    # programs (bench/lib/login-limit.c), LIMIT_SESSIONS of them (one process a side).
    : "${LIMIT_SESSIONS:=10000}"
    if command -v cc >/dev/null && cc -O2 -o "$BASE/login-limit" "$REPO/bench/lib/login-limit.c"; then
        # Twice: paced as the runs above are (RATE logins a second, uniform), and flat
        # out (512 logins in flight), where wake-ups carry several messages each.
        for pace in "${RATE:-5000}" 0; do
            out=$("$BASE/login-limit" "$((20000 + RANDOM % 40000))" "$LIMIT_SESSIONS" 512 "$pace")
            echo "$out" | awk -v n="$LIMIT_SESSIONS" -v pace="$pace" '
                / client / { cu = $4; cs = $7; rate = $NF }
                / server / { su = $4; ss = $7 }
                END { how = pace > 0 ? "at " pace "/s" : "flat out"
                      printf "| limit, %d %s (login-limit.c) | %.1f + %.1f = %.1f | %.1f + %.1f = %.1f | %.1f | %s | 0 |\n", n, how, cu, cs, cu + cs, su, ss, su + ss, cu + cs + su + ss, rate }'
        done
        ((${LIMIT_SCALE:-0} > 0)) && limit_at_scale "$LIMIT_SCALE" "${RATE:-5000}"
    else
        echo "load.sh: no C compiler (cc): the limit row is missing" >&2
    fi
    exit 0
fi
if ((QUICK)); then
    : "${SESSIONS:=100000}" "${HOLD:=30}"
else
    : "${SESSIONS:=1000000}" "${HOLD:=600}"
fi
: "${RATE:=5000}" "${EVERY:=0}" "${CONTACTS:=0}" "${ONLINE:=all}"
die() {
    echo "load.sh: $*" >&2
    exit 1
}
command -v jq >/dev/null || die "jq is missing: apt-get install -y jq"
WB=${WB:-$REPO/target/release/wirebench}
if [[ ! -x $WB ]]; then
    (cd "$REPO" && cargo build --release -p wirebench) || die "cargo build failed"
fi
OUT=${OUT:-$(mktemp -d /tmp/wirebench-load.XXXXXX)/run}

RAMP=$(((SESSIONS + RATE - 1) / RATE))
STAY=$((RAMP + HOLD))
echo "== $SESSIONS sessions at $RATE/s (ramp ${RAMP}s), all held ${HOLD}s, each staying ${STAY}s, $CONTACTS contacts ($ONLINE online); results in $OUT"
"$WB" run --protocol xmpp --workload load --payload 32 \
    --load-phases "${RAMP}s@${RATE}/s:max=${SESSIONS}+${HOLD}s@0" --load-arrivals uniform \
    --load-stay "${STAY}s" --load-think "$((RAMP + 1))s" --load-every "$EVERY" \
    --load-contacts "$CONTACTS" --load-online "$ONLINE" --load-timeout 60s --yes --out "$OUT" ||
    echo "load.sh: the run did not end cleanly; figures below are what it recorded" >&2

REC=$OUT/results.jsonl
[[ -s $REC ]] || die "no record in $REC"
m() { jq -r --arg k "$1" 'select(.metrics) | .metrics[$k].value // empty' "$REC" | tail -n 1; }
[[ -n $(m load.sessions) ]] || die "the case recorded no sessions (its error is above: the check of memory and open files up front refuses a peak this machine cannot hold)"
CSV=$OUT/case-0001-r1.load.csv
echo "== held at once: $(m load.peak_active) of $(m load.sessions) (logged in $(m load.logged_in), failed $(m load.failed))"
echo "== messages: sent $(m messages.sent), lost $(m messages.lost); roster items per session $(m load.roster_items), contacts' presences $(m load.presences)"
for c in refused timeout auth stream_error reset other; do
    v=$(m "load.failed.$c")
    [[ ${v%.*} == 0 ]] || echo "   failed ($c): $v"
done
# The ramp: intervals whose arrivals were scheduled (all but the last, partial, one).
# Two passes over the series: the peak, then the seconds spent at it.
awk -F, -v ramp="$RAMP" 'FNR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    NR == FNR { if ($c["active"] + 0 > peak) peak = $c["active"] + 0; next }
    $c["seconds"] <= ramp { n++; s += $c["logins"]; if (min == "" || $c["logins"] + 0 < min) min = $c["logins"] + 0 }
    peak > 0 && $c["active"] + 0 == peak { held++ }
    END {
        if (n) printf "== logins during the ramp: %.0f/s mean, %d in the slowest second (target >= 10,000/s)\n", s / n, min
        printf "== seconds with all %d held: %d (target: 600 at 1,000,000)\n", peak, held
    }' "$CSV" "$CSV"
awk -v a="$(m load.login.p50)" -v b="$(m load.login.p99)" -v c="$(m load.login.max)" \
    'BEGIN { printf "== login from intended start: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", a * 1e3, b * 1e3, c * 1e3 }'
awk -v g="$(m generator.rss_per_session)" -v s="$(m server.rss_per_session)" \
    'BEGIN { printf "== memory per session: generator %.2f KiB (target <= 4), server %.2f KiB\n", g / 1024, s / 1024 }'
awk -v g="$(m generator.cpu_per_session)" -v s="$(m server.cpu_per_session)" \
    'BEGIN { printf "== CPU per session: generator %.0f us, server %.0f us\n", g * 1e6, s * 1e6 }'
# Each side's CPU clocks (utime, stime of all its processes) read at the schedule's start
# and one interval after the last login; logins/s as the ramp ran them.
RAMP_RATE=$(awk -F, -v ramp="$RAMP" 'FNR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $c["seconds"] <= ramp { n++; s += $c["logins"] } END { if (n) printf "%.0f", s / n }' "$CSV")
awk -v ph="$(m load.login_phase)" -v n="$(m load.logged_in)" -v cores="$(nproc)" -v rate="$RAMP_RATE" \
    -v gu="$(m generator.cpu_user_per_login)" -v gs="$(m generator.cpu_sys_per_login)" \
    -v su="$(m server.cpu_user_per_login)" -v ss="$(m server.cpu_sys_per_login)" '
    function side(name, u, s) {
        if (u == "") { printf "   %-10s not measured\n", name ":"; return 0 }
        printf "   %-10s user %6.1f us, kernel %6.1f us, total %6.1f us per login\n", name ":", u * 1e6, s * 1e6, (u + s) * 1e6
        return u + s
    }
    BEGIN {
        if (ph == "") { print "== CPU per login: not measured (no login)"; exit }
        printf "== CPU per login over the login phase (%.0f s, %d logins at %s/s during the ramp):\n", ph, n, rate
        t = side("generator", gu, gs) + side("server", su, ss)
        if (t > 0) printf "   %-10s %6.1f us per login (target <= 200 at 1,000,000): %d cores carry at most %.0f logins/s\n", "both:", t * 1e6, cores, cores / t
    }'
