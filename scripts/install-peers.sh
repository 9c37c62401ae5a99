#!/usr/bin/env bash
# Installs what a scenario's cases need on this machine (real servers, a browser, a JDK,
# Strophe.js, ...), as the plugins declare it: `wirebench doctor --install-plan` lists the
# missing pieces, so this script knows no peer by name.
#
#   bash scripts/install-peers.sh                        # every built-in scenario
#   bash scripts/install-peers.sh browser-transports     # one study
#   bash scripts/install-peers.sh browser-transports --part browser   # run's selection flags
#
# Debian packages first, with one apt-get update and one apt-get install (as root, or
# through sudo), then this repository's own scripts (install-strophe.sh, ...). Does
# nothing, quietly, when everything is there. `wirebench run` prints this command, with
# its scenario and flags, when it refuses to start for something missing.
#
# The binary is this checkout's target/release/wirebench, built first (cargo build
# --release -p wirebench; a no-op when it is current) so the plugins that declare the
# prerequisites are these; WIREBENCH=/path/to/wirebench uses that one instead.
set -euo pipefail
for a in "$@"; do
    case $a in
    -h | --help)
        sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    esac
done
# No dirname: this runs on PATHs that hold little (the tests give it one).
here=${BASH_SOURCE[0]}
[[ $here == */* ]] && here=${here%/*} || here=.
REPO=$(cd "$here/.." && pwd)

if [[ -n ${WIREBENCH:-} ]]; then
    bin=$WIREBENCH
else
    target=${CARGO_TARGET_DIR:-$REPO/target}
    [[ $target == /* ]] || target=$REPO/$target
    bin=$target/release/wirebench
    if command -v cargo >/dev/null; then
        (cd "$REPO" && cargo build --release --quiet -p wirebench)
    elif [[ ! -x $bin ]]; then
        echo "install-peers.sh: no $bin and no cargo to build it (cargo build --release -p wirebench)" >&2
        exit 1
    fi
fi

as_root() {
    if ((EUID == 0)); then
        "$@"
    elif command -v sudo >/dev/null; then
        sudo "$@"
    else
        echo "install-peers.sh: installing packages needs root (or sudo): $*" >&2
        exit 1
    fi
}

# Each line: `apt PACKAGE`, `script PATH` or `manual TEXT` (see `wirebench doctor --help`).
# The scenario and flags are the user's, read from where the user is.
read_plan() {
    apt=() scripts=() manual=()
    local plan kind rest
    plan=$("$bin" doctor --install-plan "$@")
    while read -r kind rest; do
        case $kind in
            apt) apt+=("$rest") ;;
            script) scripts+=("$rest") ;;
            manual) manual+=("$rest") ;;
        esac
    done <<<"$plan"
}

read_plan "$@"
if ((${#apt[@]})); then
    echo "install-peers.sh: installing ${apt[*]} (Debian)" >&2
    as_root apt-get update -q >/dev/null
    as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 \
        install -y -q "${apt[@]}" >/dev/null
fi
for s in "${scripts[@]}"; do
    echo "install-peers.sh: bash $s" >&2
    bash "$REPO/$s"
done

# What is still missing after all that is either not installable (root) or a failure.
read_plan "$@"
for m in "${manual[@]}"; do
    echo "install-peers.sh: not installable, to do yourself: $m" >&2
done
if ((${#apt[@]} + ${#scripts[@]})); then
    echo "install-peers.sh: still missing after installing:" >&2
    "$bin" doctor "$@" >&2 || true
    exit 1
fi
