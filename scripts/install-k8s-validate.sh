#!/usr/bin/env bash
# What app/wirebench/tests/e2e/k8s.rs needs besides Rust: kubernetes-validate from PyPI,
# pinned, in a virtual environment of its own (target/k8s-validate-venv). It checks
# manifests against the Kubernetes API's JSON schemas (strict: no field the API lacks),
# shipped inside the package, so the check needs no cluster and no network once
# installed; it reads YAML as YAML 1.1, as kubectl does. Idempotent and quick when
# there; the tests run it themselves.
#
#   bash scripts/install-k8s-validate.sh [--help]
set -euo pipefail
case ${1:-} in
-h | --help)
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
esac
cd "$(dirname "$0")/.."

VERSION=1.37.0
VENV=target/k8s-validate-venv

if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('kubernetes-validate') != '$VERSION')" 2>/dev/null; then
    echo "install-k8s-validate.sh: installing kubernetes-validate $VERSION into $VENV" >&2
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check "kubernetes-validate==$VERSION"
fi
