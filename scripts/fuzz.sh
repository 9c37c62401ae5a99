#!/usr/bin/env bash
# Every cargo-fuzz target in the tree, SECONDS each (default 10):
#
#   bash scripts/fuzz.sh        # 10 s per target
#   bash scripts/fuzz.sh 600    # a longer session
#   FUZZ_ONLY="socks5 xmpp_server" bash scripts/fuzz.sh 300   # these targets only
#   bash scripts/fuzz.sh --list # the targets a run would fuzz, `TARGET (DIR)` a line
#   bash scripts/fuzz.sh --help # this text
#
# A fuzz directory is any `*/fuzz/Cargo.toml` with `cargo-fuzz = true`, beside the crate
# whose parser it fuzzes (CRATE/fuzz/, e.g. a protocol's engine/fuzz/): found here, never
# listed, so adding a protocol's fuzz target touches only its folder. Each is its
# own workspace with its own Cargo.lock; all build into one target directory
# ($CARGO_TARGET_DIR/fuzz, else target/fuzz) so the dependencies they share build once.
#
# Each target starts from, and leaves behind, its committed corpus (corpus/<target>/ in
# its fuzz directory), minimized after the run (`cargo fuzz cmin`) so it stays small.
# A crash (or a leak, a timeout, an out-of-memory) fails the script; its input stays in
# the fuzz directory's artifacts/<target>/ and its path is printed, to reproduce it with
# `cargo +nightly fuzz run --fuzz-dir DIR TARGET PATH`.
#
# Prints one line per target (runs, libFuzzer's coverage `cov`/`ft` from its last status
# line, crashes), then a summary line. Needs the nightly toolchain; installs cargo-fuzz
# (pinned) when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

usage() {
    echo "usage: bash scripts/fuzz.sh [SECONDS | --list | --help]  (seconds per target, default 10)" >&2
    exit 2
}
list=0
case ${1:-} in
-h | --help)
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
--list)
    (($# == 1)) || usage
    list=1
    ;;
*)
    secs=${1:-10}
    [[ $secs =~ ^[0-9]+$ && $secs -gt 0 ]] || usage
    ;;
esac

CARGO_FUZZ_VERSION=0.13.2
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: installing cargo-fuzz $CARGO_FUZZ_VERSION" >&2
    cargo install --locked --quiet cargo-fuzz --version "$CARGO_FUZZ_VERSION"
fi
# Sanitizers and -Z flags need nightly; the repository's own toolchain stays stable.
TOOLCHAIN=${FUZZ_TOOLCHAIN:-nightly}
rustup run "$TOOLCHAIN" rustc --version >/dev/null 2>&1 || {
    echo "fuzz.sh: no $TOOLCHAIN toolchain (rustup toolchain install $TOOLCHAIN)" >&2
    exit 1
}

target=${CARGO_TARGET_DIR:-$REPO/target}
[[ $target == /* ]] || target=$REPO/$target
export CARGO_TARGET_DIR=$target/fuzz

# Every fuzz directory, in path order (build output, dependencies and git skipped).
mapfile -t dirs < <(
    find . \( -name target -o -name node_modules -o -name .git \) -prune -o \
        -path '*/fuzz/Cargo.toml' -exec grep -l '^cargo-fuzz *= *true' {} + |
        sed 's|^\./||; s|/Cargo.toml$||' | sort
)
if ((${#dirs[@]} == 0)); then
    echo "fuzz.sh: no fuzz directory (*/fuzz/Cargo.toml with cargo-fuzz = true) found" >&2
    exit 1
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT

# `field NAME`: the number after `NAME:` on libFuzzer's last status line that has it.
field() { grep -o "$1: [0-9]*" "$log" | tail -n 1 | grep -o '[0-9]*$' || echo "?"; }

targets=0 failed=0 total_runs=0
# FUZZ_ONLY: target names, space- or comma-separated; a directory with none is not built.
# (`set -u`: an unset FUZZ_ONLY is read as empty, every target.)
fuzz_only=${FUZZ_ONLY:-}
only=" ${fuzz_only//,/ } "
wanted() { [[ -z $fuzz_only || $only == *" $1 "* ]]; }
for dir in "${dirs[@]}"; do
    # A directory cargo fuzz cannot read is a failure, not a directory without targets.
    if ! listed=$(cargo +"$TOOLCHAIN" fuzz list --fuzz-dir "$dir" 2>"$log"); then
        cat "$log" >&2
        echo "fuzz.sh: $dir: cargo fuzz list failed" >&2
        failed=$((failed + 1))
        continue
    fi
    picked=()
    while read -r t; do
        if [[ -n $t ]] && wanted "$t"; then picked+=("$t"); fi
    done <<<"$listed"
    ((${#picked[@]})) || continue
    if ((list)); then
        for t in "${picked[@]}"; do echo "$t ($dir)"; done
        targets=$((targets + ${#picked[@]}))
        continue
    fi
    if ! cargo +"$TOOLCHAIN" fuzz build --fuzz-dir "$dir" >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        echo "fuzz.sh: $dir does not build" >&2
        failed=$((failed + 1))
        continue
    fi
    for t in "${picked[@]}"; do
        targets=$((targets + 1))
        mkdir -p "$dir/corpus/$t"
        status=0
        cargo +"$TOOLCHAIN" fuzz run --fuzz-dir "$dir" "$t" -- \
            -max_total_time="$secs" -print_final_stats=1 >"$log" 2>&1 || status=$?
        # The final stats when it ended by itself; after a crash, the last status line's #N.
        runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$' ||
            grep -o '^#[0-9]*' "$log" | tail -n 1 | tr -d '#' || true)
        runs=${runs:-0}
        cov=$(field cov) ft=$(field ft)
        total_runs=$((total_runs + runs))
        if ((status == 0)); then
            echo "$t ($dir): $runs runs, cov $cov, ft $ft, 0 crashes"
            # Keep only the inputs that add an edge (cmin merges into a fresh directory,
            # then swaps it in; -use_counters=0: edges, not hit counts, which halves the
            # files kept), so the committed corpus stays small.
            cargo +"$TOOLCHAIN" fuzz cmin --fuzz-dir "$dir" "$t" -- -use_counters=0 >"$log" 2>&1 ||
                echo "fuzz.sh: $t: corpus not minimized (cargo fuzz cmin failed)" >&2
            continue
        fi
        failed=$((failed + 1))
        artifact=$(grep -o 'Test unit written to .*' "$log" | tail -n 1 | sed 's/^Test unit written to //')
        echo "$t ($dir): $runs runs, cov $cov, ft $ft, 1 crash: ${artifact:-no artifact (exit $status)}"
        grep -m 20 -E 'panicked|ERROR|SUMMARY' "$log" | sed 's/^/    /' >&2 || true
    done
done
((targets > 0 || failed > 0)) || {
    echo "fuzz.sh: no target matches FUZZ_ONLY=$fuzz_only" >&2
    exit 2
}
if ((list)); then
    ((failed == 0))
    exit
fi
echo "fuzz: ${#dirs[@]} fuzz dirs, $targets targets, ${secs}s each, $total_runs runs, $failed failed"
((failed == 0))
