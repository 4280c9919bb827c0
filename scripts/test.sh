#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs and starts what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --all-targets
