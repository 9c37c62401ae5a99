# shellcheck shell=bash disable=SC2034
# Shared by the conformance scripts beside this file (issue #32); sourced, not run.
# Each script installs its public suite from its registry under target/conformance/,
# starts `wirebench serve` on 127.0.0.1 (ephemeral ports, read back from its log), runs
# the suite against it and prints the suite's counts. Everything a script starts is
# stopped by PID on exit, Ctrl-C or SIGTERM.
#
# Environment: WB (the wirebench binary; default target/release/wirebench, never built
# here), CONFORMANCE_DIR (where suites are installed and results written; default
# target/conformance), PYTHON27 (a Python 2.7 interpreter; default pyenv's 2.7.18).

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$REPO/scripts/conformance
WB=${WB:-$REPO/target/release/wirebench}
CONFORMANCE_DIR=${CONFORMANCE_DIR:-$REPO/target/conformance}
NAME=$(basename "${BASH_SOURCE[1]}" .sh)

# --help (or -h), the script's first argument: its header comment, and nothing done.
case ${1:-} in
-h | --help)
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[1]}" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
esac

die() {
    echo "$NAME.sh: $*" >&2
    exit 2
}

# A script that tests no endpoint of `wirebench serve` (autobahn-client.sh) sets NO_WB=1.
[[ ${NO_WB:-0} == 1 || -x $WB ]] ||
    die "no wirebench binary at $WB (cargo build --release -p wirebench, or set WB)"
mkdir -p "$CONFORMANCE_DIR"
CONFORMANCE_DIR=$(cd "$CONFORMANCE_DIR" && pwd)
# This run's logs and reports, replaced by the next run of the same script (RUN_NAME:
# a script whose runs may go on side by side, as the conformance test runs them, names
# each its own).
OUT=$CONFORMANCE_DIR/${RUN_NAME:-$NAME}-run
rm -rf "$OUT"
mkdir -p "$OUT"

PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do
        # wirebench serve exits within a second of SIGTERM; anything slower is killed.
        for _ in $(seq 30); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    PIDS=()
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_wb READY ARGS...: runs `wirebench serve --listen 127.0.0.1:0 ARGS...` in the
# background, its output in $OUT/serve.log, and waits for a log line matching READY (an
# extended regex; each endpoint says where it listens once it does).
start_wb() {
    local ready=$1
    shift
    "$WB" serve --listen 127.0.0.1:0 "$@" >"$OUT/serve.log" 2>&1 &
    PIDS+=($!)
    local pid=$!
    for _ in $(seq 200); do
        grep -qE "$ready" "$OUT/serve.log" && return 0
        kill -0 "$pid" 2>/dev/null || die "wirebench serve exited: $(cat "$OUT/serve.log")"
        sleep 0.05
    done
    die "wirebench serve did not start in 10 s: $(cat "$OUT/serve.log")"
}

# run_suite DIR LOG LIMIT CMD...: runs CMD in DIR with output to LOG, at most LIMIT
# seconds, in the background so that Ctrl-C or SIGTERM stops it at once (bash runs a
# trap only after a foreground command ends); sets SUITE_RC to its exit status.
run_suite() {
    local dir=$1 log=$2 limit=$3
    shift 3
    (cd "$dir" && exec timeout "$limit" "$@") >"$log" 2>&1 &
    PIDS+=($!)
    SUITE_RC=0
    wait $! || SUITE_RC=$?
}

# served_addr REGEX: the first IP:PORT on the serve log's line matching REGEX.
served_addr() {
    local a
    a=$(grep -E "$1" "$OUT/serve.log" | head -1 | grep -oE '127\.0\.0\.1:[0-9]+' | head -1)
    [[ -n $a ]] || die "no address for /$1/ in the serve log: $(cat "$OUT/serve.log")"
    echo "$a"
}

# py27_venv DIR REQUIREMENTS: a Python 2.7 virtualenv at DIR holding exactly the pinned
# REQUIREMENTS (PyPI), made once and remade when the requirements file changes.
py27_venv() {
    local dir=$1 req=$2
    # Scripts sharing a virtualenv may start together (the conformance test runs its
    # tests in parallel): one makes it while the others wait, then find it made.
    local lock
    exec {lock}>"$dir.lock"
    flock "$lock"
    _py27_venv "$dir" "$req"
    flock -u "$lock"
    exec {lock}>&-
}

_py27_venv() {
    local dir=$1 req=$2
    if [[ -x $dir/bin/python ]] && cmp -s "$req" "$dir/requirements.txt"; then
        return 0
    fi
    local py=${PYTHON27:-}
    if [[ -z $py ]]; then
        py=$(PYENV_VERSION=2.7.18 pyenv which python2.7 2>/dev/null) ||
            py=$(command -v python2.7) ||
            die "needs Python 2.7 (pyenv install 2.7.18, or set PYTHON27)"
    fi
    echo "$NAME.sh: installing a Python 2.7 virtualenv in $dir (PyPI)" >&2
    # virtualenv itself, in a directory of its own: nothing goes into the interpreter's
    # site-packages. pip picks the last release that still runs on 2.7.
    local ve=$CONFORMANCE_DIR/py27-virtualenv
    if [[ ! -d $ve/virtualenv ]]; then
        "$py" -m pip install -q --disable-pip-version-check --no-warn-script-location \
            --target "$ve" 'virtualenv<20.16' >"$OUT/pip.log" 2>&1 ||
            die "could not install virtualenv for $py: $(cat "$OUT/pip.log")"
    fi
    rm -rf "$dir"
    PYTHONPATH=$ve "$py" -m virtualenv -q "$dir" >"$OUT/pip.log" 2>&1 ||
        die "virtualenv $dir failed: $(cat "$OUT/pip.log")"
    "$dir/bin/pip" install -q --disable-pip-version-check -r "$req" >"$OUT/pip.log" 2>&1 ||
        die "pip install -r $req into $dir failed: $(cat "$OUT/pip.log")"
    cp "$req" "$dir/requirements.txt"
}
