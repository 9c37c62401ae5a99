#!/usr/bin/env bash
# The Autobahn testsuite (wstest 0.8.2, PyPI, Python 2.7) in fuzzingserver mode against
# wirebench's WebSocket client: the `websocket` protocol's client (its connect, upgrade,
# limits and receive path; protocols/websocket/plugin/src/autobahn.rs) runs every case
# the server offers, echoing each text and binary message, then asks for the report
# (issue #32). The fuzzingserver listens on 127.0.0.1, an ephemeral port.
#
#   bash scripts/conformance/autobahn-client.sh
#   QUICK=1 bash scripts/conformance/autobahn-client.sh   # cases 1.*, 2.*, 5.*, 7.* only
#   CASES='6.*,7.1.*' EXCLUDE='9.*' bash scripts/conformance/autobahn-client.sh
#
# CASES and EXCLUDE as in autobahn.sh (12.* and 13.* are permessage-deflate, which the
# client does not offer: UNIMPLEMENTED, skipped). The client is the example
# `autobahn_client` of wirebench-plugin-websocket, built here with cargo (release) unless
# AUTOBAHN_CLIENT names one. Prints each failing case with wstest's reason and an
# unclean closing handshake counted as a failure, then the behaviour counts and
# `autobahn-client: N passed, N failed, N skipped`. Exits 1 when a case failed, 2 when
# the suite could not run. Also: CONFORMANCE_DIR, PYTHON27 (lib.sh). wstest's HTML and
# JSON reports in target/conformance/autobahn-client-run/reports/.
set -euo pipefail
# shellcheck disable=SC2034 # read by lib.sh
NO_WB=1
# shellcheck source=scripts/conformance/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ ${QUICK:-0} == 1 ]]; then
    : "${CASES:=1.*,2.*,5.*,7.*}"
fi
CASES=${CASES:-*}
EXCLUDE=${EXCLUDE:-}

VENV=$CONFORMANCE_DIR/autobahn-venv
py27_venv "$VENV" "$HERE/autobahn-requirements.txt"

CLIENT=${AUTOBAHN_CLIENT:+$(realpath "$AUTOBAHN_CLIENT")}
if [[ -z $CLIENT ]]; then
    # cargo names the executable it built (wherever CARGO_TARGET_DIR puts it).
    CLIENT=$(cd "$REPO" && cargo build --release --locked -q -p wirebench-plugin-websocket \
        --example autobahn_client --message-format=json 2>"$OUT/build.log" |
        python3 -c 'import json, sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "autobahn_client" and m.get("executable"):
        print(m["executable"])') || true
    [[ -x $CLIENT ]] || die "could not build the example autobahn_client: $(cat "$OUT/build.log")"
fi

json_list() { python3 -c 'import json, sys; print(json.dumps([c for c in sys.argv[1].split(",") if c]))' "$1"; }
cat >"$OUT/spec.json" <<JSON
{
  "outdir": "$OUT/reports",
  "cases": $(json_list "$CASES"),
  "exclude-cases": $(json_list "$EXCLUDE"),
  "exclude-agent-cases": {}
}
JSON

# wstest's fuzzingserver, on loopback (scripts/conformance/autobahn_fuzzingserver.py).
(cd "$OUT" && exec "$VENV/bin/python" "$HERE/autobahn_fuzzingserver.py" spec.json) \
    >"$OUT/wstest.log" 2>&1 &
PIDS+=($!)
server=$!
ADDR=
for _ in $(seq 400); do
    ADDR=$(grep -oE 'listening on 127\.0\.0\.1:[0-9]+' "$OUT/wstest.log" | grep -oE '[0-9.]+:[0-9]+' || true)
    [[ -n $ADDR ]] && break
    kill -0 "$server" 2>/dev/null || die "the fuzzingserver exited: $(cat "$OUT/wstest.log")"
    sleep 0.05
done
[[ -n $ADDR ]] || die "the fuzzingserver did not start in 20 s: $(cat "$OUT/wstest.log")"
echo "autobahn-client: wstest fuzzingserver at ws://$ADDR, cases ${CASES}${EXCLUDE:+ but $EXCLUDE}, client: the websocket protocol's ($(basename "$CLIENT"))"

run_suite "$OUT" "$OUT/client.log" 3600 "$CLIENT" "$ADDR" wirebench
[[ $SUITE_RC == 0 && -f $OUT/reports/index.json ]] ||
    die "the client did not finish (exit $SUITE_RC; $OUT/client.log) or wstest wrote no report ($OUT/wstest.log): $(tail -5 "$OUT/client.log")"
SUITE=autobahn-client python3 "$HERE/summarize.py" autobahn "$OUT/reports/index.json"
