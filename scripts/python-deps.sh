#!/usr/bin/env bash
# Installs the Python packages sonde's tests use, with pip, only where
# they are missing. Safe to run again.
#   iperf3  (PyPI) its TestResult reads `--json=iperf3` documents as it
#           reads iperf3's own (crates/sonde/tests/iperf3_consumers.py, run by tests/interop/iperf3_json_layout.rs)
#   prometheus_client  (PyPI) its OpenMetrics parser reads `/metrics`
#           (crates/sonde/tests/portal/http_api.rs)
#   schemathesis, openapi-spec-validator  (PyPI) the API's OpenAPI
#           document checked, and the API fuzzed against it
#           (crates/sonde/tests/portal/http_openapi.rs)
#   aiosmtpd  (PyPI) a real SMTP server that incident and alert mail goes
#           to (crates/sonde/tests/portal/incidents_api.rs, incidents_cli.rs,
#           alerts_deliveries.rs)
set -euo pipefail

# A fresh Debian machine may have neither python3 nor pip.
if ! command -v python3 >/dev/null 2>&1 || ! python3 -m pip --version >/dev/null 2>&1; then
    echo "python-deps: installing python3 and pip (apt-get)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends python3 python3-pip >/dev/null
fi

if ! python3 -c 'import iperf3' >/dev/null 2>&1; then
    echo "python-deps: installing iperf3 (PyPI)" >&2
    pip=(python3 -m pip install --quiet --disable-pip-version-check iperf3==0.1.11)
    # Debian's own python3 refuses pip installs into the system
    # (PEP 668) unless told; a pyenv or venv python takes them as is.
    "${pip[@]}" 2>/dev/null || "${pip[@]}" --break-system-packages
fi

if ! python3 -c 'import prometheus_client' >/dev/null 2>&1; then
    echo "python-deps: installing prometheus_client (PyPI)" >&2
    pip=(python3 -m pip install --quiet --disable-pip-version-check prometheus_client==0.21.1)
    "${pip[@]}" 2>/dev/null || "${pip[@]}" --break-system-packages
fi

# hypothesis is pinned too, so that every machine fuzzes with the same
# one: schemathesis 4.32.5 takes any 6.x from 6.130. (Its reports' names
# of lambdas trip a CPython 3.11 ast bug now and then; http_openapi.rs
# names them without parsing.)
if ! python3 -c 'import schemathesis, openapi_spec_validator, hypothesis
assert hypothesis.__version__ == "6.160.0"' >/dev/null 2>&1; then
    echo "python-deps: installing schemathesis, hypothesis and openapi-spec-validator (PyPI)" >&2
    pip=(python3 -m pip install --quiet --disable-pip-version-check schemathesis==4.32.5
        hypothesis==6.160.0 openapi-spec-validator==0.9.0)
    "${pip[@]}" 2>/dev/null || "${pip[@]}" --break-system-packages
fi

if ! python3 -c 'import aiosmtpd' >/dev/null 2>&1; then
    echo "python-deps: installing aiosmtpd (PyPI)" >&2
    pip=(python3 -m pip install --quiet --disable-pip-version-check aiosmtpd==1.4.6)
    "${pip[@]}" 2>/dev/null || "${pip[@]}" --break-system-packages
fi
