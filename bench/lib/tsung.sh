# shellcheck shell=bash
# What bench/tsung.sh and bench/mqtt-load.sh share: a generator run under the memory and
# CPU sampler, the cleanup of everything the run started (Tsung's VMs detach from their
# parent, so they are found by a tag in their environment), and reading the figures back
# from Tsung's tsung.log, wirebench's record and the samplers' files. Sourced; expects
# REPO, OUT and TAG set, and TLOG and REC before the figures are read.

PIDS=()

# Stops what this run started: its own children, then every process carrying its tag.
tsung_cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in /proc/[0-9]*; do
        if { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qx "WB_BENCH_TAG=$TAG.*"; then
            kill "${p#/proc/}" 2>/dev/null || true
        fi
    done
}

# measured NAME SKIP CMD...: runs CMD as generator TAG.NAME while proc-usage.py samples
# it (leaving out processes named SKIP unless it is empty: a broker the case starts is not
# the generator); usage in $OUT/NAME.usage.json.
measured() {
    local name=$1 skip=$2
    shift 2
    python3 "$REPO/bench/lib/proc-usage.py" "$TAG.$name" "$OUT/$name.usage.json" ${skip:+"$skip"} &
    local sampler=$!
    PIDS+=("$sampler")
    local rc=0
    WB_BENCH_TAG=$TAG.$name "$@" || rc=$?
    kill -TERM "$sampler"
    wait "$sampler" || true
    return $rc
}

# m METRIC: the metric's value in wirebench's last record.
m() { jq -r --arg k "$1" 'select(.metrics) | .metrics[$k].value // empty' "$REC" | tail -n 1; }

# ts NAME WANT: from Tsung's stats lines (NAME count mean stddev max min global_mean
# global_count: the last dump's interval figures plus everything before it; or NAME value
# max), the last line's max2 (a gauge's highest), count, mean or max.
ts() {
    awk -v n="$1" -v want="$2" '$1 == "stats:" && $2 == n { last = $0 }
        END {
            if (last == "") { print 0; exit }
            split(last, f, " ")
            if (want == "max2") print f[4] + 0
            else if (want == "count") print f[3] + f[9]
            else if (want == "mean") print (f[3] + f[9] > 0) ? (f[3] * f[4] + f[9] * f[8]) / (f[3] + f[9]) : 0
            else if (want == "max") print f[6] + 0
        }' "$TLOG"
}

# Tsung's errors of every kind, as its last dump counts them.
tsung_errors() {
    awk '$1 == "stats:" && $2 ~ /^error_/ { last[$2] = $4 } END { s = 0; for (k in last) s += last[k]; print s }' "$TLOG"
}

# u NAME FIELD: a field of generator NAME's usage file.
u() { jq -r ".$2" "$OUT/$1.usage.json"; }
