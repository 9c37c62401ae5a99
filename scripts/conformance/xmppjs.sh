#!/usr/bin/env bash
# xmpp.js (npm @xmpp/client, a client nobody here wrote) against wirebench's built-in
# XMPP server: `wirebench serve --xmpp ADDR`, two sessions doing SASL (SCRAM-SHA-1, which
# xmpp.js picks over a plain connection), resource binding, a roster get, presence, a
# message each way, an XEP-0199 ping to the server and a clean close (issue #32).
#
#   bash scripts/conformance/xmppjs.sh
#
# Installs @xmpp/client XMPPJS_VERSION (default 0.14.0; its own dependencies at what npm
# resolves) under target/conformance/xmppjs with npm. Prints one line per check, then
# `xmppjs: N passed, N failed, N skipped`. Exits 1 when a check failed, 2 when it could
# not run. Also: WB, CONFORMANCE_DIR (scripts/conformance/lib.sh). The server's log in
# target/conformance/xmppjs-run/.
set -euo pipefail
# shellcheck source=scripts/conformance/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION=${XMPPJS_VERSION:-0.14.0}
DIR=$CONFORMANCE_DIR/xmppjs
stamp=$DIR/.version
if [[ ! -d $DIR/node_modules/@xmpp/client ]] || [[ $(cat "$stamp" 2>/dev/null) != "$VERSION" ]]; then
    command -v npm >/dev/null || die "needs Node.js and npm to install @xmpp/client"
    echo "xmppjs.sh: npm install @xmpp/client@$VERSION" >&2
    mkdir -p "$DIR"
    (cd "$DIR" && npm install --no-save --no-audit --no-fund "@xmpp/client@$VERSION") >"$OUT/install.log" 2>&1 ||
        die "npm install failed: $(cat "$OUT/install.log")"
    echo "$VERSION" >"$stamp"
fi
# Node resolves the script's imports from where the script is: beside node_modules.
cp "$HERE/xmppjs_session.mjs" "$DIR/"

# A port of our own: the XMPP listener's address is given, not read back.
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start_wb 'XMPP layout' --xmpp "127.0.0.1:$PORT" --xmpp-users 10
echo "xmpp.js: @xmpp/client $VERSION against wirebench serve --xmpp 127.0.0.1:$PORT (domain wirebench.test)"
run_suite "$DIR" "$OUT/xmppjs.log" 60 node xmppjs_session.mjs "127.0.0.1:$PORT" wirebench.test
cat "$OUT/xmppjs.log"
grep -q '^xmppjs: ' "$OUT/xmppjs.log" || die "the session script did not finish (exit $SUITE_RC)"
exit $((SUITE_RC == 0 ? 0 : 1))
