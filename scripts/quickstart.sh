#!/usr/bin/env bash
# Builds sonde and runs its main job on this machine: `sonde quickstart`
# starts a server inside the process and measures TCP over IPv6 and IPv4
# on loopback, each way.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null 2>&1 || { echo "quickstart: cargo (Rust) is needed: https://rustup.rs" >&2; exit 1; }
# The web portal built into the agent comes from npm at build time
# (crates/sonde-web/build.rs): Node.js and npm, from Debian.
if ! command -v npm >/dev/null 2>&1; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "quickstart: npm is needed to build the web portal; run as root or install nodejs and npm" >&2
        exit 1
    fi
    echo "quickstart: installing nodejs and npm (apt-get)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
cargo build --release --locked -q -p sonde
exec target/release/sonde quickstart "$@"
