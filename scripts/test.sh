#!/usr/bin/env bash
# The whole test suite, on a fresh machine or this one. Installs what the tests need,
# then runs every test in the workspace. Needs root: the lab tests build network
# namespaces, and real servers (Prosody) come from Debian's packages.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the tests use: iproute2 (ip netns), util-linux (setpriv), prosody and
# ngircd (real servers), chromium (the HTML report is checked in a real browser).
missing=()
command -v ip >/dev/null || missing+=(iproute2)
command -v setpriv >/dev/null || missing+=(util-linux)
command -v prosody >/dev/null || missing+=(prosody)
command -v ngircd >/dev/null || missing+=(ngircd)
command -v chromium >/dev/null || missing+=(chromium)
if ((${#missing[@]})); then
    echo "scripts/test.sh: installing ${missing[*]}" >&2
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q "${missing[@]}" >/dev/null
fi

# Tests run in release mode: the end-to-end tests move real traffic, and an optimized
# build keeps them quick without changing what they check.
cargo test --workspace --release --locked "$@"
