#!/usr/bin/env bash
# Runs every check and test sonde has: formatting, clippy (warnings are
# errors), unit, property, integration and lab tests. Lab tests build
# network namespaces and need root (CI is root); without root set
# SONDE_LAB=skip to leave them out.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-deps.sh
bash scripts/python-deps.sh
bash scripts/services.sh
cargo fmt --all -- --check
cargo clippy --locked --workspace --all-targets -q -- -D warnings
cargo test --locked --workspace
