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
bash scripts/rust-tools.sh
bash scripts/services.sh
# A clean clone (CI's) gains nothing from incremental compilation's
# records and pays for writing them: CI builds without them.
if [ "${CI:-}" = true ]; then
    export CARGO_INCREMENTAL=0
fi
cargo fmt --all -- --check
cargo clippy --locked --workspace --all-targets -q -- -D warnings

# The tests are built once, then run as two streams, one after the other:
# the lab binary (namespaces; one lab measures at a time, through the
# user-space link emulator), then every other test binary of the
# workspace. They ran at the same time until 2026-11-27, the lab at nice
# -10: clean runs still lost NDR, QoS and overhead figures to the other
# stream's load now and then (a sender stalled behind the interop, serve
# and portal binaries), and a red CI lands nothing. Run after each other
# they cost about 8 minutes more and measure on a quiet machine. Each
# stream runs every binary to its end (--no-fail-fast), so that one
# failure hides no other; the slowest binaries of both are named at the
# end.
cargo test --locked --workspace --no-run -q
times=$(mktemp -d)
trap 'rm -rf "$times"' EXIT
failed=0
# Both streams select with --workspace, as the build did, so that both
# find every artifact built (a narrower selection unifies features
# differently and would build again).
cargo test --locked --workspace --no-fail-fast --test lab 2>&1 |
    python3 scripts/binary-times.py --times "$times/lab" || failed=1
# Everything else; the lab binary's tests here leave themselves to the
# stream above (SONDE_LAB=elsewhere: common::lab_allowed).
SONDE_LAB=elsewhere cargo test --locked --workspace --no-fail-fast 2>&1 |
    python3 scripts/binary-times.py --times "$times/rest" || failed=1
python3 scripts/binary-times.py --summary "$times/rest" "$times/lab"
if [ "$failed" -ne 0 ]; then
    echo "test.sh: some tests failed (see above; each stream ran to its end)" >&2
fi
exit "$failed"
