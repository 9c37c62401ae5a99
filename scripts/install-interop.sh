#!/usr/bin/env bash
# What the interop tests (protocols/xmpp/server/tests/integration/interop.rs) need besides Rust:
# Tsung from Debian and slixmpp from PyPI, pinned, in a virtual environment of its own
# (target/interop-venv), so the system's Python is left alone. Idempotent and quick when
# everything is there; the tests run it themselves. Needs root for apt-get.
#
#   bash scripts/install-interop.sh [--help]
set -euo pipefail
case ${1:-} in
-h | --help)
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
esac
cd "$(dirname "$0")/.."

SLIXMPP=1.8.5
VENV=target/interop-venv

if ! command -v tsung >/dev/null; then
    echo "install-interop.sh: installing tsung" >&2
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q tsung >/dev/null
fi
if ! "$VENV/bin/python" -c "import slixmpp, sys; sys.exit(slixmpp.__version__ != '$SLIXMPP')" 2>/dev/null; then
    echo "install-interop.sh: installing slixmpp $SLIXMPP into $VENV" >&2
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check "slixmpp==$SLIXMPP"
fi
