#!/usr/bin/env bash
# The whole test suite, on a fresh machine or this one. Installs what the tests need,
# then runs every test in the workspace. Needs root: the lab tests build network
# namespaces, and real servers (Prosody) come from Debian's packages.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the tests use: iproute2 (ip netns), util-linux (setpriv), prosody,
# ejabberd and ngircd (real servers; erlang-luerl lets ejabberd import load runs' accounts), tsung (a real client; slixmpp comes from PyPI through
# scripts/install-interop.sh, which the interop tests run), chromium (the HTML report is checked in a real browser), curl
# (a README example runs it behind a link), a JDK (rmi's Java pair), microsocks (a real
# SOCKS5 proxy beside ours), shadowsocks-libev (ss-server and ss-tunnel beside our
# Shadowsocks server and client), mosquitto (the MQTT broker of the mqtt protocol; in
# /usr/sbin, off a non-root PATH).
missing=()
command -v ip >/dev/null || missing+=(iproute2)
command -v setpriv >/dev/null || missing+=(util-linux)
command -v prosody >/dev/null || missing+=(prosody)
command -v erl >/dev/null && compgen -G '/usr/lib/x86_64-linux-gnu/ejabberd-*' >/dev/null || missing+=(ejabberd)
compgen -G '/usr/lib/erlang/lib/luerl-*' >/dev/null || missing+=(erlang-luerl)
command -v ngircd >/dev/null || missing+=(ngircd)
command -v tsung >/dev/null || missing+=(tsung)
command -v chromium >/dev/null || missing+=(chromium)
command -v curl >/dev/null || missing+=(curl)
# npm installs Strophe.js (pinned) for the S2 page run in headless Chromium (xmpp.client=browser).
command -v npm >/dev/null || missing+=(npm)
# The rmi protocol compiles its Java RMI client/server pair with the JDK at run time.
command -v javac >/dev/null || missing+=(default-jdk-headless)
command -v microsocks >/dev/null || missing+=(microsocks)
command -v ss-server >/dev/null || missing+=(shadowsocks-libev)
command -v mosquitto >/dev/null || [[ -x /usr/sbin/mosquitto ]] || missing+=(mosquitto)
if ((${#missing[@]})); then
    echo "scripts/test.sh: installing ${missing[*]}" >&2
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q "${missing[@]}" >/dev/null
fi
# Strophe.js for tests/browser.rs, from the committed lock file (does nothing when current).
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
