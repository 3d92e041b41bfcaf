#!/usr/bin/env bash
# Builds sonde and runs its main job on this machine: `sonde quickstart`
# starts a server inside the process and measures TCP over IPv6 and IPv4
# on loopback, each way.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null 2>&1 || { echo "quickstart: cargo (Rust) is needed: https://rustup.rs" >&2; exit 1; }
cargo build --release --locked -q -p sonde
exec target/release/sonde quickstart "$@"
