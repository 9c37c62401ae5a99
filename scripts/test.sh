#!/usr/bin/env bash
# The whole test suite, on a fresh machine or this one: installs what the tests need,
# then runs every test of the workspace and the smoke test of the shell scripts.
# docs/testing.md gives the tiers, what each checks and how long each takes. Needs root:
# the lab tests build network namespaces, and real servers (Prosody) come from Debian.
#
#   bash scripts/test.sh                       # everything (what CI runs)
#   bash scripts/test.sh -E 'binary(e2e)'      # arguments go to cargo nextest run
#   bash scripts/test.sh --help                # this text
#
# The last line sums every runner's counts: `tests: N passed, N failed[, N skipped]`.
set -euo pipefail

case ${1:-} in
-h | --help)
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
esac
cd "$(dirname "$0")/.."

# The suite's build: the release profile (the end-to-end tests move real traffic, and an
# optimized build keeps them quick without changing what they check) without its debug
# line tables, which only profiling needs and which double the time to link the ~70
# test executables. A `cargo build --release` of one's own keeps them (and builds apart).
export CARGO_PROFILE_RELEASE_DEBUG=0
target=${CARGO_TARGET_DIR:-target}

# cargo-nextest runs the tests (.config/nextest.toml: four at a time, the lab's in turn),
# pinned, built once per machine into ~/.cargo/bin.
NEXTEST_VERSION=0.9.151
if [[ $(cargo nextest --version 2>/dev/null | head -n 1) != "cargo-nextest $NEXTEST_VERSION"* ]]; then
    echo "scripts/test.sh: installing cargo-nextest $NEXTEST_VERSION (a few minutes, once)" >&2
    cargo install --locked --quiet cargo-nextest --version "$NEXTEST_VERSION"
fi

# One build of every test target, the wirebench binary among them: the binary's own
# `cargo build -p wirebench` would resolve other features and build many crates twice.
built=1
cargo test --workspace --release --locked --no-run --quiet || built=0

# Debian packages: every one a plugin may need, for any parameter value (real servers,
# a browser, a JDK, iproute2 for the lab, npm for Strophe.js: `wirebench doctor --packages`,
# from the plugins' own declarations, so this script names no protocol's peer), plus what
# only the tests use: tsung (a real client; slixmpp comes from PyPI through
# scripts/install-interop.sh, which the interop tests run), curl (a README example runs
# it behind a link), nghttp2-server (nghttpd, a strict HTTP/2 server the conformance
# test runs our HTTP/2 client against), ngtcp2-client (gtlsclient, which the QUIC interop
# test runs against our server) and shellcheck (scripts/check-scripts.sh).
# A package counts as there when Debian has it installed or a program of its name is on
# PATH (an npm from elsewhere).
packages=(tsung curl nghttp2-server ngtcp2-client shellcheck)
if ((built)); then
    mapfile -t -O ${#packages[@]} packages < <("$target/release/wirebench" doctor --packages)
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
# The built-in scenarios' peers that this repository's own scripts install (aiocoap, ...):
# the `script` lines of `wirebench doctor --install-plan`, so this script names none.
if ((built)); then
    while read -r kind rest; do
        if [[ $kind == script ]]; then
            bash "$rest"
        fi
    done < <("$target/release/wirebench" doctor --install-plan)
fi
# shadowsocks-rust (ssserver, sslocal), the Shadowsocks 2022 peer, pinned (built once per
# machine, several minutes; does nothing when there).
bash scripts/install-shadowsocks-rust.sh
# quic-go's example HTTP/3 server and client, pinned (no built-in scenario runs them).
bash scripts/install-quic-go.sh

# --no-fail-fast (also nextest's config): one failing test must not hide the others.
# The log stays (target/test-suite.log): scripts/test-times.sh makes docs/testing.md's
# table from it.
mkdir -p "$target"
log=$target/test-suite.log
: >"$log"
status=0
set +e
cargo nextest run --workspace --release --locked --no-fail-fast "$@" 2>&1 | tee "$log"
((PIPESTATUS[0] == 0)) || status=1
# nextest does not run doctests; cargo's own runner does (a few, in the crates' docs).
cargo test --workspace --release --locked --doc --quiet 2>&1 | tee -a "$log"
((PIPESTATUS[0] == 0)) || status=1
bash scripts/check-scripts.sh 2>&1 | tee -a "$log"
((PIPESTATUS[0] == 0)) || status=1
set -e
# nextest: `Summary [ 1.0s] 9 tests run: 8 passed, 1 failed, 2 skipped` (also `N timed
# out`); cargo test: `test result: ok. 8 passed; 0 failed; 1 ignored; ...`;
# check-scripts.sh: `scripts: 66 passed, 0 failed`.
summary=$(awk '
    /^ *Summary \[/ || /^scripts: [0-9]+ passed/ || /^test result:/ {
        for (i = 2; i <= NF; i++) {
            if ($i ~ /^passed[;,]?$/) p += $(i - 1)
            if ($i ~ /^failed[;,]?$/) f += $(i - 1)
            if ($i == "timed" && $(i + 1) ~ /^out/) f += $(i - 1)
            if ($i ~ /^(ignored|skipped)[;,]?$/) s += $(i - 1)
        }
    }
    END { printf "%d passed, %d failed", p, f; if (s) printf ", %d skipped", s }' "$log")
if [[ $status -ne 0 && $summary == *" 0 failed"* ]]; then
    echo "scripts/test.sh: a runner exited non-zero before its tests could report (build error?)" >&2
fi
echo "tests: $summary"
exit "$status"
