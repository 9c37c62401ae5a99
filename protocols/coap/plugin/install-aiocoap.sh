#!/usr/bin/env bash
# aiocoap from PyPI, pinned, in a virtual environment of its own
# (target/peers/aiocoap-0.4.17), so the system's Python is left alone: the peer of
# `coap.server=aiocoap`, which protocols/coap/plugin finds there. Idempotent and quick
# when it is there. `bash scripts/install-peers.sh` runs it for the cases that need it.
#
#   bash protocols/coap/plugin/install-aiocoap.sh [--help]
set -euo pipefail
case ${1:-} in
-h | --help)
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
esac
cd "$(dirname "$0")/../../.."

VERSION=0.4.17
VENV=target/peers/aiocoap-$VERSION

if "$VENV/bin/python" -c "import aiocoap.meta, sys; sys.exit(aiocoap.meta.version != '$VERSION')" 2>/dev/null; then
    exit 0
fi
echo "install-aiocoap.sh: installing aiocoap $VERSION into $VENV" >&2
mkdir -p target/peers
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check "aiocoap==$VERSION"
