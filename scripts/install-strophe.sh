#!/usr/bin/env bash
# Installs Strophe.js and sockjs-client, pinned by bench/strophe-browser/package-lock.json, into
# target/strophe-browser (or $WIREBENCH_STROPHE_DIR) for the S2 page that wirebench serves to
# headless Chromium (xmpp.client=browser). Idempotent and quiet: does nothing when the
# installed tree matches the committed lock file. scripts/test.sh runs it; so can you:
#
#   bash scripts/install-strophe.sh
#
# Needs npm (Debian: apt-get install npm) and the npm registry, once.
set -euo pipefail
case ${1:-} in
-h | --help)
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
esac
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SRC=$REPO/bench/strophe-browser
DIR=${WIREBENCH_STROPHE_DIR:-$REPO/target/strophe-browser}
BUNDLE=$DIR/node_modules/strophe.js/dist/strophe.umd.min.js
current() {
    [[ -f $BUNDLE ]] && cmp -s "$SRC/package-lock.json" "$DIR/package-lock.json" &&
        cmp -s "$SRC/package.json" "$DIR/package.json"
}
current && exit 0
command -v npm >/dev/null || {
    echo "install-strophe.sh: needs npm (apt-get install npm)" >&2
    exit 1
}
mkdir -p "$DIR"
# One install at a time (tests run in parallel and may all call this): the others wait,
# then find it current.
exec 9>"$DIR/.install.lock"
flock 9
current && exit 0
cp "$SRC/package.json" "$SRC/package-lock.json" "$DIR/"
# npm ci installs exactly the lock file's versions (and checks their integrity hashes).
(cd "$DIR" && npm ci --no-audit --no-fund --silent) || {
    echo "install-strophe.sh: npm ci failed in $DIR" >&2
    exit 1
}
[[ -f $BUNDLE ]] || {
    echo "install-strophe.sh: $BUNDLE missing after npm ci" >&2
    exit 1
}
