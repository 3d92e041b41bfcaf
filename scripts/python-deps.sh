#!/usr/bin/env bash
# Installs the Python packages sonde's tests use, with pip, only where
# they are missing. Safe to run again.
#   iperf3  (PyPI) its TestResult reads `--json=iperf3` documents as it
#           reads iperf3's own (crates/sonde/tests/iperf3_consumers.rs)
set -euo pipefail

if ! python3 -c 'import iperf3' >/dev/null 2>&1; then
    echo "python-deps: installing iperf3 (PyPI)" >&2
    python3 -m pip install --quiet --disable-pip-version-check iperf3==0.1.11
fi
