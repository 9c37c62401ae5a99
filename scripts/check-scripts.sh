#!/usr/bin/env bash
# The smoke test of the repository's shell scripts (issue #53), for CI and for anyone:
#
#   bash scripts/check-scripts.sh                          # every step
#   CHECK_SCRIPTS_FUZZ=0 bash scripts/check-scripts.sh     # without the fuzz step
#   bash scripts/check-scripts.sh --help                   # this text
#
# 1. shellcheck: `shellcheck -x` on every shell script, the tracked *.sh files and the
#    tracked files without that name whose first line is a sh or bash shebang (.ci/run).
#    Installs shellcheck from Debian when it is missing (root).
# 2. help: `--help` of every script under bench/ and scripts/ that is run rather than
#    sourced (it has a shebang), but this one and scripts/test.sh: it exits 0, prints its
#    usage on stdout, leaves no process behind (each run is marked by an environment
#    variable, and every process still carrying it afterwards is named, then killed), and
#    builds and installs nothing: cargo, rustup, apt-get, npm, pip, go, sudo and the
#    network and namespace tools are stand-ins that fail, and any call to one fails the
#    check.
# 3. fuzz: `scripts/fuzz.sh --list` names a target in every fuzz directory
#    (*/fuzz/Cargo.toml with cargo-fuzz = true) with FUZZ_ONLY unset, the same with it
#    empty, only CHECK_SCRIPTS_FUZZ_TARGET with it set to that; then fuzzes that target
#    for 1 s (default grpc_blob, whose crate has the fewest dependencies). Needs the
#    nightly toolchain; fuzz.sh installs cargo-fuzz when missing, and builds the target
#    (a minute or two the first time). The target's corpus, when it had no changes
#    before, is restored after the run: a one-second smoke keeps nothing it found.
#    CHECK_SCRIPTS_FUZZ=0 skips the step.
# 4. quick: names the bench scripts that have a --quick mode; runs none of them (they
#    need root, a peer installed or more than a few seconds).
#
# Prints one line per check (`ok` or `FAILED`, with what failed indented below it), the
# time each step took, then `scripts: N passed, N failed`. Exits 1 when a check failed,
# 2 on a bad argument.
set -euo pipefail

case ${1:-} in
-h | --help)
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
"") ;;
*)
    echo "check-scripts.sh: unknown argument $1 (try --help)" >&2
    exit 2
    ;;
esac

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
SELF=scripts/check-scripts.sh
FUZZ_TARGET=${CHECK_SCRIPTS_FUZZ_TARGET:-grpc_blob}

TMP=$(mktemp -d /tmp/check-scripts.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

passed=0 failed=0
ok() {
    passed=$((passed + 1))
    echo "ok      $*"
}
# failed WHAT [FILE]: the check failed; FILE's last lines shown indented below it.
failed() {
    failed=$((failed + 1))
    echo "FAILED  $1"
    if [[ -n ${2:-} && -s $2 ]]; then tail -n 20 "$2" | sed 's/^/        /'; fi
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
step_t0=0
step() {
    step_t0=$(now_ms)
    echo "-- $*"
}
step_done() {
    local ms=$(($(now_ms) - step_t0))
    printf -- '-- %s: %d.%01d s\n' "$1" $((ms / 1000)) $((ms % 1000 / 100))
}

# Every tracked shell script: *.sh, and files whose first line is a sh or bash shebang.
shell_scripts() {
    {
        git ls-files '*.sh'
        git ls-files -z | xargs -0 awk 'FNR == 1 && /^#!.*[\/ ](ba)?sh( |$)/ { print FILENAME } { nextfile }'
    } | sort -u
}

# ---------------------------------------------------------------- 1. shellcheck
step "shellcheck"
if ! command -v shellcheck >/dev/null; then
    if ((EUID == 0)) && command -v apt-get >/dev/null; then
        echo "check-scripts.sh: installing shellcheck (Debian)" >&2
        apt-get update -q >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q shellcheck >/dev/null
    fi
fi
if command -v shellcheck >/dev/null; then
    mapfile -t scripts < <(shell_scripts)
    for f in "${scripts[@]}"; do
        if shellcheck -x "$f" >"$TMP/shellcheck.out" 2>&1; then
            ok "shellcheck $f"
        else
            failed "shellcheck $f" "$TMP/shellcheck.out"
        fi
    done
else
    failed "shellcheck: not installed (apt-get install shellcheck, as root)"
fi
step_done "shellcheck ($(shellcheck --version 2>/dev/null | sed -n 's/^version: //p'))"

# ---------------------------------------------------------------- 2. --help
step "--help of every script that is run"
SHIMS=$TMP/shims CALLS=$TMP/calls
mkdir -p "$SHIMS"
for c in cargo rustup rustc apt-get apt dpkg npm npx pip pip3 go sudo curl wget git \
    ip tc sysctl unshare nsenter mount iptables nft systemctl; do
    printf '#!/bin/sh\necho "%s $*" >>"%s"\nexit 97\n' "$c" "$CALLS" >"$SHIMS/$c"
    chmod +x "$SHIMS/$c"
done
# left_behind TOKEN: the PIDs of processes whose environment holds CHECK_SCRIPTS_RUN=TOKEN.
left_behind() {
    grep -lzx "CHECK_SCRIPTS_RUN=$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 || true
}
mapfile -t runnable < <(git ls-files 'bench/*.sh' 'scripts/*.sh' | while read -r f; do
    [[ $f == "$SELF" || $f == scripts/test.sh ]] && continue
    [[ $(head -c 2 "$f") == '#!' ]] && echo "$f"
done)
n=0
for f in "${runnable[@]}"; do
    n=$((n + 1))
    token=$$.$n.$RANDOM
    : >"$CALLS"
    rc=0
    CHECK_SCRIPTS_RUN=$token PATH="$SHIMS:$PATH" timeout -k 5 30 bash "$f" --help \
        </dev/null >"$TMP/help.out" 2>"$TMP/help.err" || rc=$?
    mapfile -t pids < <(left_behind "$token")
    why=
    if ((rc == 124)); then
        why+="; timed out after 30 s"
    elif ((rc != 0)); then
        why+="; exit $rc"
    fi
    [[ -s $TMP/help.out ]] || why+="; nothing on stdout"
    if [[ -s $CALLS ]]; then why+="; ran $(paste -sd ',' "$CALLS")"; fi
    if ((${#pids[@]})); then
        why+="; left running: $(for p in "${pids[@]}"; do ps -o pid=,args= -p "$p"; done | sed 's/^ *//' | paste -sd ',')"
        kill -TERM "${pids[@]}" 2>/dev/null || true
        sleep 1
        kill -KILL "${pids[@]}" 2>/dev/null || true
    fi
    if [[ -n $why ]]; then
        failed "$f --help: ${why#; }" "$TMP/help.err"
    else
        ok "$f --help ($(wc -l <"$TMP/help.out") lines)"
    fi
done
step_done "--help of ${#runnable[@]} scripts"

# ---------------------------------------------------------------- 3. fuzz
if [[ ${CHECK_SCRIPTS_FUZZ:-1} == 0 ]]; then
    echo "-- fuzz: skipped (CHECK_SCRIPTS_FUZZ=0)"
else
    step "fuzz: scripts/fuzz.sh --list, then $FUZZ_TARGET for 1 s"
    mapfile -t fuzz_dirs < <(git ls-files '*/fuzz/Cargo.toml' | xargs -r grep -l '^cargo-fuzz *= *true' |
        sed 's|/Cargo.toml$||' | sort)
    rc=0
    env -u FUZZ_ONLY bash scripts/fuzz.sh --list >"$TMP/list" 2>"$TMP/list.err" || rc=$?
    missing=()
    for d in "${fuzz_dirs[@]}"; do
        grep -qF " ($d)" "$TMP/list" || missing+=("$d")
    done
    if ((rc != 0)); then
        failed "fuzz.sh --list: exit $rc" "$TMP/list.err"
    elif ((${#fuzz_dirs[@]} == 0 || ${#missing[@]})); then
        failed "fuzz.sh --list: no target listed for ${missing[*]:-any fuzz directory (none found)}" "$TMP/list"
    else
        ok "fuzz.sh --list: $(wc -l <"$TMP/list") targets in ${#fuzz_dirs[@]} fuzz directories"
    fi

    rc=0
    FUZZ_ONLY='' bash scripts/fuzz.sh --list >"$TMP/list-empty" 2>"$TMP/list.err" || rc=$?
    if ((rc == 0)) && cmp -s "$TMP/list" "$TMP/list-empty"; then
        ok "fuzz.sh --list: FUZZ_ONLY empty lists what FUZZ_ONLY unset does"
    else
        failed "fuzz.sh --list: FUZZ_ONLY empty (exit $rc) lists other targets than FUZZ_ONLY unset" "$TMP/list.err"
    fi

    rc=0
    FUZZ_ONLY=$FUZZ_TARGET bash scripts/fuzz.sh --list >"$TMP/list-one" 2>"$TMP/list.err" || rc=$?
    if ((rc == 0)) && [[ $(wc -l <"$TMP/list-one") == 1 && $(cat "$TMP/list-one") == "$FUZZ_TARGET ("*")" ]]; then
        ok "fuzz.sh --list: FUZZ_ONLY=$FUZZ_TARGET lists $(cat "$TMP/list-one")"
    else
        failed "fuzz.sh --list: FUZZ_ONLY=$FUZZ_TARGET (exit $rc) does not list that target alone: $(paste -sd ';' "$TMP/list-one")" "$TMP/list.err"
    fi

    line=$(grep -m 1 "^$FUZZ_TARGET (" "$TMP/list" || true)
    dir=${line#* (}
    dir=${dir%)}
    if [[ -z $line ]]; then
        failed "fuzz.sh 1: no fuzz target $FUZZ_TARGET (CHECK_SCRIPTS_FUZZ_TARGET)"
    else
        corpus=$dir/corpus/$FUZZ_TARGET
        restore=0
        [[ -z $(git status --porcelain -- "$corpus") ]] && restore=1
        t0=$(now_ms)
        rc=0
        FUZZ_ONLY=$FUZZ_TARGET bash scripts/fuzz.sh 1 >"$TMP/fuzz.out" 2>&1 || rc=$?
        ms=$(($(now_ms) - t0))
        if ((restore)); then
            git checkout -q -- "$corpus" 2>/dev/null || true
            git clean -fdq -- "$corpus"
        fi
        result=$(grep -m 1 "^$FUZZ_TARGET ($dir): " "$TMP/fuzz.out" || true)
        if ((rc == 0)) && [[ $result == *", 0 crashes" ]] && grep -q '^fuzz: .* 1 targets, 1s each' "$TMP/fuzz.out"; then
            ok "FUZZ_ONLY=$FUZZ_TARGET fuzz.sh 1: ${result#*: } ($((ms / 1000)) s with its build)"
        else
            failed "FUZZ_ONLY=$FUZZ_TARGET fuzz.sh 1: exit $rc" "$TMP/fuzz.out"
        fi
    fi
    step_done "fuzz"
fi

# ---------------------------------------------------------------- 4. --quick
echo "-- bench scripts with a --quick mode (not run here: root, peers or minutes):"
git ls-files 'bench/*.sh' | xargs grep -l -e '--quick)' | sed 's/^/        /'

echo "scripts: $passed passed, $failed failed"
((failed == 0))
