#!/usr/bin/env bash
# Installs the system packages sonde's tests and benchmarks use, with
# apt-get, only where they are missing. Safe to run again.
#   iperf3     the peer for interoperability tests and bench/tcp-vs-iperf3
#   iproute2   ip and tc: network namespaces, veth links, TBF shaping (lab tests)
#   ethtool    turns offloads off on lab links
#   nftables   policers, remarking and loss injection (lab)
#   iputils-ping  the system ping that sonde's RTT is compared with
#   traceroute, iputils-tracepath  the system's hops and path MTU that
#              `sonde trace` is compared with (tests/lab/lab_trace.rs)
#   zsh, fish  check that `sonde completions zsh|fish` parses
#   groff      checks that `sonde man` pages read without warnings
#   fonts-dejavu-core  the font report charts are drawn with in PNG (resvg)
#   chromium   opens the HTML report in the tests, and prints `sonde report --format pdf`;
#              the portal's browser tests run in it
#   nodejs npm build the web portal (crates/sonde-web/build.rs: npm ci, vite)
#   nginx      the real HTTP/1.1, TLS and HTTP/2 peer of `sonde http`'s tests
#              and bench/http-vs-wrk (each starts its own; the system service
#              the package starts is stopped and disabled)
#   wrk        the HTTP load generator bench/http-vs-wrk compares sonde with
#   openssl    makes the self-signed certificate the nginx fixture serves, and
#              the CA and certificate of the TLS-only PostgreSQL (scripts/services.sh)
#   curl       checks the HTTP fixtures over TLS and HTTP/2
#   mosquitto  the MQTT broker probes publish readings to (tests and bench/ingest)
#   snmpd      the router's SNMP agent the lab's link-load test polls (IF-MIB
#              counters of a lab router's interface, v2c and v3)
#   irtt       the latency peer bench/rtt-vs-irtt compares sonde's RTT and IPDV with
#   dpkg binutils adduser systemd util-linux libcap2-bin  scripts/package.sh builds
#              the Debian package with dpkg-deb (strip from binutils); its test installs it (adduser makes the
#              `sonde` user), checks the unit with systemd-analyze, and starts the
#              binary as the unit does with setpriv; capsh reads capability sets
set -euo pipefail

need=()
command -v iperf3 >/dev/null 2>&1 || need+=(iperf3)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v tc >/dev/null 2>&1 || need+=(iproute2)
command -v ethtool >/dev/null 2>&1 || need+=(ethtool)
command -v nft >/dev/null 2>&1 || need+=(nftables)
command -v ping >/dev/null 2>&1 || need+=(iputils-ping)
command -v traceroute >/dev/null 2>&1 || need+=(traceroute)
command -v tracepath >/dev/null 2>&1 || need+=(iputils-tracepath)
command -v zsh >/dev/null 2>&1 || need+=(zsh)
command -v fish >/dev/null 2>&1 || need+=(fish)
command -v groff >/dev/null 2>&1 || need+=(groff-base)
command -v dpkg-deb >/dev/null 2>&1 || need+=(dpkg)
command -v strip >/dev/null 2>&1 || need+=(binutils)
command -v irtt >/dev/null 2>&1 || need+=(irtt)
[ -x /usr/sbin/snmpd ] || need+=(snmpd)
command -v adduser >/dev/null 2>&1 || need+=(adduser)
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
command -v capsh >/dev/null 2>&1 || need+=(libcap2-bin)
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need+=(fonts-dejavu-core)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v npm >/dev/null 2>&1 || need+=(nodejs npm)
[ -x /usr/sbin/nginx ] || need+=(nginx)
command -v wrk >/dev/null 2>&1 || need+=(wrk)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || need+=(mosquitto)

if [ "${#need[@]}" -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "system-deps: missing ${need[*]}; run as root or install them" >&2
        exit 1
    fi
    echo "system-deps: installing ${need[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    # Tests and benchmarks start their own nginx on free ports: the one the
    # package starts would hold port 80 and serve nothing of ours.
    if [[ " ${need[*]} " == *" nginx "* ]]; then
        if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
            systemctl disable --now nginx >/dev/null 2>&1 || true
        fi
        if [ -s /run/nginx.pid ]; then
            /usr/sbin/nginx -s quit >/dev/null 2>&1 || true
        fi
    fi
fi
