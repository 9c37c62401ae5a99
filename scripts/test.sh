#!/usr/bin/env bash
# The whole test suite, on a fresh machine or this one. Installs what the tests need,
# then runs every test in the workspace. Needs root: the lab tests build network
# namespaces, and real servers (Prosody) come from Debian's packages.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: every one a plugin may need, for any parameter value (real servers,
# a browser, a JDK, iproute2 for the lab, npm for Strophe.js: `wirebench doctor --packages`,
# from the plugins' own declarations, so this script names no protocol's peer), plus what
# only the tests use: tsung (a real client; slixmpp comes from PyPI through
# scripts/install-interop.sh, which the interop tests run), curl (a README example runs
# it behind a link) and nghttp2-server (nghttpd, a strict HTTP/2 server the conformance
# test runs our HTTP/2 client against). The binary is built first (the same release build the tests use).
# A package counts as there when Debian has it installed or a program of its name is on
# PATH (an npm from elsewhere).
packages=(tsung curl nghttp2-server)
if cargo build --release --locked --quiet -p wirebench; then
    mapfile -t -O ${#packages[@]} packages < <("${CARGO_TARGET_DIR:-target}/release/wirebench" doctor --packages)
else
    echo "scripts/test.sh: wirebench does not build; packages not checked" >&2
fi
missing=()
for p in "${packages[@]}"; do
    [[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null) == ii* ]] ||
        command -v "$p" >/dev/null || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "scripts/test.sh: installing ${missing[*]}" >&2
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q "${missing[@]}" >/dev/null
fi
# Strophe.js for tests/e2e/browser.rs, from the committed lock file (does nothing when current).
bash scripts/install-strophe.sh
# shadowsocks-rust (ssserver, sslocal), the Shadowsocks 2022 peer, pinned, into
# target/peers (built once, several minutes; does nothing when there).
bash scripts/install-shadowsocks-rust.sh

# Tests run in release mode: the end-to-end tests move real traffic, and an optimized
# build keeps them quick without changing what they check.
# --no-fail-fast: one failing test binary must not hide the results of the others. The
# last line sums every binary's "test result:" line, so a reader (or CI) sees one total.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --workspace --release --locked --no-fail-fast "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
summary=$(awk '/^test result:/ {
        for (i = 2; i <= NF; i++) {
            if ($i ~ /^passed;?$/) p += $(i - 1)
            if ($i ~ /^failed;?$/) f += $(i - 1)
            if ($i ~ /^ignored;?$/) s += $(i - 1)
        }
    }
    END { printf "%d passed, %d failed", p, f; if (s) printf ", %d skipped", s }' "$log")
if [[ $status -ne 0 && $summary == *" 0 failed"* ]]; then
    echo "scripts/test.sh: cargo test exited $status before its tests could report (build error?)" >&2
fi
echo "tests: $summary"
exit "$status"
