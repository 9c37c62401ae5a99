#!/usr/bin/env bash
# The SockJS 0.3.3 protocol suite (sockjs-protocol's sockjs-protocol-0.3.3.py, Python 2.7)
# against wirebench's SockJS endpoint: `wirebench serve --xmpp --xmpp-sockjs
# --xmpp-sockjs-test-services`, the gateway in front of the built-in XMPP server, with
# the suite's services beside XMPP on the same session engine (issue #32).
#
#   bash scripts/conformance/sockjs.sh [TEST ...]     # e.g. Protocol InfoTest.test_basic
#
# The suite wants the services /echo, /close, /disabled_websocket_echo and
# /cookie_needed_echo under SOCKJS_URL: --xmpp-sockjs-test-services offers them (every
# other prefix stays an XMPP session).
# The WebsocketHixie76 tests are not run (counted as skipped): that draft WebSocket is
# gone from browsers, and every SockJS server skips them.
#
# The suite itself is on no package registry (only its dependencies are, on PyPI:
# scripts/conformance/sockjs-requirements.txt). It is read from SOCKJS_PROTOCOL_DIR
# (default target/conformance/sockjs-protocol), which must hold sockjs-protocol-0.3.3.py,
# utils_03.py and httplib_fork.py; when they are missing and SOCKJS_PROTOCOL_GIT names a
# clone of the public sockjs/sockjs-protocol repository (a path or URL), they are taken
# from its commit SOCKJS_PROTOCOL_COMMIT (default 6c6415e, the last one that has the
# per-version 0.3.3 suite).
#
# Prints each failing test with the suite's reason, then `sockjs: N passed, N failed,
# N skipped`; exits 1 when a test failed, 2 when the suite could not run. Also: WB,
# CONFORMANCE_DIR, PYTHON27 (scripts/conformance/lib.sh). Results in
# target/conformance/sockjs-run/.
set -euo pipefail
# shellcheck source=scripts/conformance/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SUITE_DIR=${SOCKJS_PROTOCOL_DIR:-$CONFORMANCE_DIR/sockjs-protocol}
FILES=(sockjs-protocol-0.3.3.py utils_03.py httplib_fork.py)
have_suite() {
    local f
    for f in "${FILES[@]}"; do [[ -f $SUITE_DIR/$f ]] || return 1; done
}
if ! have_suite && [[ -n ${SOCKJS_PROTOCOL_GIT:-} ]]; then
    commit=${SOCKJS_PROTOCOL_COMMIT:-6c6415ebdbfeb9df63e6d36484202d0c5d2816be}
    rm -rf "$OUT/clone"
    git clone -q --bare "$SOCKJS_PROTOCOL_GIT" "$OUT/clone" || die "git clone $SOCKJS_PROTOCOL_GIT failed"
    mkdir -p "$SUITE_DIR"
    for f in "${FILES[@]}"; do
        git -C "$OUT/clone" show "$commit:$f" >"$SUITE_DIR/$f" || die "no $f at $commit"
    done
    rm -rf "$OUT/clone"
fi
have_suite || die "the suite is not in $SUITE_DIR (${FILES[*]}): set SOCKJS_PROTOCOL_DIR to a \
directory holding them, or SOCKJS_PROTOCOL_GIT to a clone of sockjs/sockjs-protocol"

VENV=$CONFORMANCE_DIR/sockjs-venv
py27_venv "$VENV" "$HERE/sockjs-requirements.txt"
# The suite's websocket tests expect the ws4py fork they were written against (http://
# URLs, a read hook that reports the server's close): a .pth line loads the shim that
# gives ws4py's release both (scripts/conformance/sockjs_ws4py.py).
site=$("$VENV/bin/python" -c 'import ws4py, os; print(os.path.dirname(os.path.dirname(ws4py.__file__)))')
cp "$HERE/sockjs_ws4py.py" "$site/"
echo "import sockjs_ws4py" >"$site/sockjs_ws4py.pth"

start_wb 'over SockJS' --xmpp 127.0.0.1:0 --xmpp-users 10 --xmpp-sockjs 127.0.0.1:0 \
    --xmpp-sockjs-test-services
ADDR=$(served_addr 'over SockJS')
echo "sockjs: suite in $SUITE_DIR, endpoint http://$ADDR (wirebench serve --xmpp --xmpp-sockjs --xmpp-sockjs-test-services)"

if (($# == 0)); then
    # Every test class of the suite but the hixie-76 one, in the file's order.
    mapfile -t tests < <(grep -oE '^class \w+\(Test\)' "$SUITE_DIR/sockjs-protocol-0.3.3.py" |
        sed -E 's/^class (\w+).*/\1/' | grep -vx WebsocketHixie76)
    skips=()
    # shellcheck disable=SC2013 # test names are single words
    for t in $(awk '/^class /{on = /^class WebsocketHixie76\(/} on' "$SUITE_DIR/sockjs-protocol-0.3.3.py" |
        grep -oE 'def test_\w+' | sed 's/^def //'); do
        skips+=("WebsocketHixie76.$t=hixie-76 draft WebSocket, gone from browsers")
    done
else
    tests=("$@")
    skips=()
fi

# utf-8: a failure message with non-ASCII text would otherwise end the run unprinted.
export SOCKJS_URL=http://$ADDR PYTHONIOENCODING=utf-8
run_suite "$SUITE_DIR" "$OUT/suite.log" 900 "$VENV/bin/python" sockjs-protocol-0.3.3.py -v "${tests[@]}"
grep -qE '^Ran [0-9]+ tests?' "$OUT/suite.log" ||
    die "the suite did not finish (exit $SUITE_RC); its output: $OUT/suite.log"
SUITE=sockjs python3 "$HERE/summarize.py" unittest "$OUT/suite.log" "${skips[@]}"
