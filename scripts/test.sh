#!/usr/bin/env bash
# The whole test suite, on a fresh machine or this one. Installs what the tests need
# (today: nothing beyond the Rust toolchain), then runs every test in the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

# Tests run in release mode: the end-to-end tests move real traffic, and an optimized
# build keeps them quick without changing what they check.
cargo test --workspace --release --locked "$@"
