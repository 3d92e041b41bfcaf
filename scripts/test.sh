#!/usr/bin/env bash
# Runs every check and test sonde has: formatting, clippy (warnings are
# errors), unit, property, integration and lab tests. Lab tests build
# network namespaces and need root (CI is root); without root set
# SONDE_LAB=skip to leave them out. With CI set (as .ci/run sets it), a test
# whose tool is missing fails, naming the tool, instead of leaving its
# check out.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-deps.sh
bash scripts/python-deps.sh
bash scripts/services.sh
cargo fmt --all -- --check
cargo clippy --locked --workspace --all-targets -q -- -D warnings
# Every test binary runs to its end (--no-fail-fast), so that one failure
# does not hide the rest; the slowest binaries are named at the end.
cargo test --locked --workspace --no-fail-fast 2>&1 | python3 scripts/binary-times.py
