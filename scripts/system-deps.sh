#!/usr/bin/env bash
# Installs the system packages sonde's tests and benchmarks use, with
# apt-get, only where they are missing. Safe to run again.
#   iperf3     the peer for interoperability tests and bench/tcp-vs-iperf3
#   iproute2   ip and tc: network namespaces, veth links, TBF shaping (lab tests)
#   ethtool    turns offloads off on lab links
#   nftables   policers, remarking and loss injection (lab)
#   iputils-ping  the system ping that sonde's RTT is compared with
#   zsh, fish  check that `sonde completions zsh|fish` parses
#   groff      checks that `sonde man` pages read without warnings
#   fonts-dejavu-core  the font report charts are drawn with in PNG (resvg)
#   chromium   opens the HTML report in the tests, and prints `sonde report --format pdf`;
#              the portal's browser tests run in it
#   nodejs npm build the web portal (crates/sonde-web/build.rs: npm ci, vite)
set -euo pipefail

need=()
command -v iperf3 >/dev/null 2>&1 || need+=(iperf3)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v tc >/dev/null 2>&1 || need+=(iproute2)
command -v ethtool >/dev/null 2>&1 || need+=(ethtool)
command -v nft >/dev/null 2>&1 || need+=(nftables)
command -v ping >/dev/null 2>&1 || need+=(iputils-ping)
command -v zsh >/dev/null 2>&1 || need+=(zsh)
command -v fish >/dev/null 2>&1 || need+=(fish)
command -v groff >/dev/null 2>&1 || need+=(groff-base)
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need+=(fonts-dejavu-core)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v npm >/dev/null 2>&1 || need+=(nodejs npm)

if [ "${#need[@]}" -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "system-deps: missing ${need[*]}; run as root or install them" >&2
        exit 1
    fi
    echo "system-deps: installing ${need[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
