#!/usr/bin/env bash
# h2spec (Go module github.com/summerwind/h2spec, HTTP/2 conformance, RFC 7540/7541)
# against wirebench's HTTP server: `wirebench serve --also http=ADDR`, plain h2c with
# prior knowledge (issue #32).
#
#   bash scripts/conformance/h2spec.sh
#   STRICT=1 bash scripts/conformance/h2spec.sh     # also h2spec's strict cases (-S)
#
# Installs h2spec H2SPEC_VERSION (default v2.2.1+incompatible, its last release; it has
# no go.mod, so its dependencies come at their newest versions) with `go install` into
# target/conformance/bin (GOBIN). Prints each failing case (section/number and title)
# with h2spec's expected and actual, then `h2spec: N passed, N failed, N skipped`.
# Exits 1 when a case failed, 2 when the suite could not run. Also: WB, CONFORMANCE_DIR
# (scripts/conformance/lib.sh), H2SPEC_PATH (the request path, default /echo).
# h2spec's output and JUnit report in target/conformance/h2spec-run/.
set -euo pipefail
# shellcheck source=scripts/conformance/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION=${H2SPEC_VERSION:-v2.2.1+incompatible}
BIN=$CONFORMANCE_DIR/bin
H2SPEC=$BIN/h2spec
stamp=$BIN/.h2spec-version
if [[ ! -x $H2SPEC ]] || [[ $(cat "$stamp" 2>/dev/null) != "$VERSION" ]]; then
    command -v go >/dev/null || die "needs Go (go install) to install h2spec"
    echo "h2spec.sh: go install github.com/summerwind/h2spec/cmd/h2spec@$VERSION" >&2
    GOBIN=$BIN go install "github.com/summerwind/h2spec/cmd/h2spec@$VERSION" >"$OUT/install.log" 2>&1 ||
        die "go install failed: $(cat "$OUT/install.log")"
    echo "$VERSION" >"$stamp"
fi

start_wb 'http on' --also http=127.0.0.1:0
ADDR=$(served_addr 'http on')
echo "h2spec: $VERSION$([[ ${STRICT:-0} == 1 ]] && echo " (strict)") against h2c with prior knowledge at http://$ADDR${H2SPEC_PATH:-/echo} (wirebench serve --also http)"

args=(-h "${ADDR%:*}" -p "${ADDR##*:}" -P "${H2SPEC_PATH:-/echo}" -j "$OUT/junit.xml")
[[ ${STRICT:-0} == 1 ]] && args+=(-S)
run_suite "$OUT" "$OUT/h2spec.log" 900 "$H2SPEC" "${args[@]}"
[[ -f $OUT/junit.xml ]] || die "h2spec wrote no report (exit $SUITE_RC); its output: $OUT/h2spec.log"
SUITE=h2spec python3 "$HERE/summarize.py" h2spec "$OUT/junit.xml"
