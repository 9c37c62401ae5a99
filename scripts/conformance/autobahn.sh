#!/usr/bin/env bash
# The Autobahn testsuite (wstest 0.8.2, PyPI, Python 2.7) in fuzzingclient mode against
# wirebench's WebSocket echo server: `wirebench serve --also websocket=ADDR`, at
# ws://ADDR/conformance, the path that echoes text as well as binary messages (issue #32);
# or, with ENDPOINT=xmpp-websocket, against the RFC 7395 endpoint (`serve --xmpp ...
# --xmpp-websocket ADDR`, ws://ADDR/xmpp-websocket, subprotocol xmpp offered).
#
#   bash scripts/conformance/autobahn.sh
#   QUICK=1 bash scripts/conformance/autobahn.sh          # cases 1.*, 2.*, 5.*, 7.* only
#   CASES='6.*,7.1.*' EXCLUDE='9.*' bash scripts/conformance/autobahn.sh
#   ENDPOINT=xmpp-websocket bash scripts/conformance/autobahn.sh
#
# The RFC 7395 endpoint carries XMPP and echoes nothing (a text message must be an XMPP
# element; a binary one is refused): a case that expects a message back cannot apply and
# is counted skipped, whatever wstest said of it (summarize.py, AUTOBAHN_NO_ECHO). The
# rest (pings, reserved bits and opcodes, control frames and fragments, invalid UTF-8,
# close frames and codes) test its WebSocket framing as they test the echo server's.
#
# CASES and EXCLUDE are comma-separated wstest case patterns (default: every case, none
# excluded; 12.* and 13.* are permessage-deflate, reported UNIMPLEMENTED (skipped) by a
# server that does not offer it). Prints each failing case with wstest's reason and an
# unclean closing handshake counted as a failure, then the behaviour counts and
# `autobahn: N passed, N failed, N skipped` (passed: OK, NON-STRICT or INFORMATIONAL with
# a clean close). Exits 1 when a case failed, 2 when the suite could not run. Also: WB,
# CONFORMANCE_DIR, PYTHON27 (scripts/conformance/lib.sh). wstest's HTML and JSON reports
# in target/conformance/autobahn-run/reports/ (autobahn-xmpp-websocket-run/ for that
# endpoint).
set -euo pipefail
# Each endpoint's run in its own directory: the conformance test runs both at once.
# shellcheck disable=SC2034 # read by lib.sh
[[ ${ENDPOINT:-websocket} == websocket ]] || RUN_NAME=autobahn-${ENDPOINT}
# shellcheck source=scripts/conformance/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ ${QUICK:-0} == 1 ]]; then
    : "${CASES:=1.*,2.*,5.*,7.*}"
fi
CASES=${CASES:-*}
EXCLUDE=${EXCLUDE:-}

VENV=$CONFORMANCE_DIR/autobahn-venv
py27_venv "$VENV" "$HERE/autobahn-requirements.txt"

case ${ENDPOINT:-websocket} in
websocket)
    start_wb 'websocket on' --also websocket=127.0.0.1:0
    URL=ws://$(served_addr 'websocket on')/conformance
    PROTOCOLS='[]'
    served='wirebench serve --also websocket'
    ;;
xmpp-websocket)
    # No rate limit: the suite's large-message cases are about framing, not shaping.
    start_wb 'XMPP over WebSocket' --xmpp 127.0.0.1:0 --xmpp-websocket 127.0.0.1:0 --xmpp-websocket-max-rate 0 --xmpp-users 10
    URL=ws://$(served_addr 'XMPP over WebSocket')/xmpp-websocket
    PROTOCOLS='["xmpp"]'
    served='wirebench serve --xmpp --xmpp-websocket, RFC 7395; cases that expect an echo skipped'
    export AUTOBAHN_NO_ECHO=1
    ;;
*) die "unknown ENDPOINT ${ENDPOINT} (websocket, xmpp-websocket)" ;;
esac
echo "autobahn: wstest fuzzingclient, cases ${CASES}${EXCLUDE:+ but $EXCLUDE}, against $URL ($served)"

json_list() { python3 -c 'import json, sys; print(json.dumps([c for c in sys.argv[1].split(",") if c]))' "$1"; }
cat >"$OUT/spec.json" <<EOF
{
  "outdir": "$OUT/reports",
  "servers": [{"agent": "wirebench", "url": "$URL", "protocols": $PROTOCOLS}],
  "cases": $(json_list "$CASES"),
  "exclude-cases": $(json_list "$EXCLUDE"),
  "exclude-agent-cases": {}
}
EOF
# wstest runs from $OUT: it writes its own files beside where it runs.
run_suite "$OUT" "$OUT/wstest.log" 3600 "$VENV/bin/wstest" -m fuzzingclient -s spec.json
[[ -f $OUT/reports/index.json ]] ||
    die "wstest wrote no report (exit $SUITE_RC); its output: $OUT/wstest.log"
SUITE=autobahn python3 "$HERE/summarize.py" autobahn "$OUT/reports/index.json"
