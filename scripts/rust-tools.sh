#!/usr/bin/env bash
# Installs the Rust programs sonde's interoperability tests use as
# independent peers, with cargo install from crates.io, only where they
# are missing. Safe to run again.
#   stamp-suite 1.0.0  a STAMP (RFC 8762, RFC 8972) session-sender and
#                      session-reflector that sonde did not write
#                      (crates/sonde/tests/interop/stamp_interop.rs)
set -euo pipefail

if ! command -v stamp-suite >/dev/null 2>&1 ||
    ! stamp-suite --version 2>/dev/null | grep -q ' 1\.0\.0$'; then
    echo "rust-tools: installing stamp-suite 1.0.0 (cargo install)"
    cargo install --quiet --locked stamp-suite --version 1.0.0
fi
