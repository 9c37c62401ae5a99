# shellcheck shell=bash
# What the install scripts of pinned peers built from source share (sourced, not run).
# A peer is built once per machine into WIREBENCH_PEERS_CACHE (default
# ~/.cache/wirebench)/NAME and target/peers/NAME links to it, so a fresh clone (CI's)
# costs nothing once the machine has built it.
#
#   source scripts/lib/cached-peer.sh
#   script_help "${BASH_SOURCE[0]}" "${1:-}"   # -h/--help: the script's header, then exit
#   cached_peer NAME                           # sets LINK and ROOT, from the checkout's root
#   ... build into "$ROOT" unless it is there ...
#   link_cached_peer

# With -h or --help as ARG, prints SCRIPT's header comment (line 2 up to `set -euo`)
# without its `# ` and exits 0.
script_help() {
    case ${2:-} in
    -h | --help)
        sed -n '2,/^set -euo/p' "$1" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    esac
}

# LINK: where the plugins look (target/peers/NAME); ROOT: the machine's built copy.
cached_peer() {
    LINK=target/peers/$1
    ROOT=${WIREBENCH_PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wirebench}/$1
}

link_cached_peer() {
    mkdir -p target/peers
    rm -rf "$LINK"
    ln -s "$ROOT" "$LINK"
}
