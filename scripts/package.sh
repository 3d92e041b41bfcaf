#!/usr/bin/env bash
# Builds sonde's Debian package (docs/install.md) with dpkg-deb:
#   scripts/package.sh [--binary PATH] [--out DIR] [--compress xz|gzip|none] [--version V]
# Without --binary it builds the release binary first (cargo build
# --release); the tests package the binary they built. The package has
# the binary, its man pages and shell completions, a commented
# /etc/sonde/serve.toml (a conffile), the systemd unit and the maintainer
# scripts of packaging/. It prints the .deb's path. --version gives the
# package another version than Cargo.toml's (the tests' upgrade from one
# version to the next).
set -euo pipefail
cd "$(dirname "$0")/.."

binary="" out="dist" compress="xz" version=""
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) binary="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --compress) compress="$2"; shift 2 ;;
        --version) version="$2"; shift 2 ;;
        *) echo "package.sh: unknown argument '$1' (--binary PATH, --out DIR, --compress xz|gzip|none, --version V)" >&2; exit 2 ;;
    esac
done
if [ -n "$version" ] && ! [[ "$version" =~ ^[0-9][A-Za-z0-9.+~-]*$ ]]; then
    echo "package.sh: --version '$version' is not a Debian version (a digit, then letters, digits, . + ~ -)" >&2
    exit 2
fi
for tool in dpkg-deb dpkg strip gzip; do
    command -v "$tool" >/dev/null 2>&1 || { echo "package.sh: $tool is missing (scripts/system-deps.sh installs it)" >&2; exit 1; }
done
if [ -z "$binary" ]; then
    cargo build --release --locked -p sonde >&2
    binary="target/release/sonde"
fi
[ -x "$binary" ] || { echo "package.sh: $binary is not an executable" >&2; exit 2; }

[ -n "$version" ] || version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
arch=$(dpkg --print-architecture)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/sonde"

install -D -m 0755 "$binary" "$root/usr/bin/sonde"
strip --strip-debug "$root/usr/bin/sonde"
mkdir -p "$root/usr/share/man/man1"
"$root/usr/bin/sonde" man --dir "$root/usr/share/man/man1"
gzip -9n "$root"/usr/share/man/man1/*.1
install -d "$root/usr/share/bash-completion/completions" \
    "$root/usr/share/zsh/vendor-completions" "$root/usr/share/fish/vendor_completions.d"
"$root/usr/bin/sonde" completions bash > "$root/usr/share/bash-completion/completions/sonde"
"$root/usr/bin/sonde" completions zsh > "$root/usr/share/zsh/vendor-completions/_sonde"
"$root/usr/bin/sonde" completions fish > "$root/usr/share/fish/vendor_completions.d/sonde.fish"
install -D -m 0640 packaging/serve.toml "$root/etc/sonde/serve.toml"
install -D -m 0644 packaging/sonde.service "$root/lib/systemd/system/sonde.service"
install -D -m 0644 README.md "$root/usr/share/doc/sonde/README.md"
install -m 0644 docs/install.md docs/serve.md "$root/usr/share/doc/sonde/"
printf 'sonde\nLicense: Apache-2.0 (/usr/share/common-licenses/Apache-2.0)\n' \
    > "$root/usr/share/doc/sonde/copyright"
find "$root/usr/share" -type f -exec chmod 0644 {} +

install -d "$root/DEBIAN"
install -m 0755 packaging/debian/preinst packaging/debian/postinst \
    packaging/debian/prerm packaging/debian/postrm "$root/DEBIAN/"
echo /etc/sonde/serve.toml > "$root/DEBIAN/conffiles"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat > "$root/DEBIAN/control" <<CONTROL
Package: sonde
Version: $version
Architecture: $arch
Maintainer: sonde developers <sonde@localhost>
Installed-Size: $size
Depends: libc6 (>= 2.34), libgcc-s1, adduser
Suggests: iperf3
Section: net
Priority: optional
Description: network performance measurement agent
 sonde measures a path (TCP, UDP, RTT, HTTP, its hops), finds its limits
 (RFC 2544 no-loss search, rate sweeps, QoS checks), runs batteries of
 tests on a schedule across many agents and keeps every result in an
 archive. This package runs its agent (sonde serve) as a system service
 under its own user.
CONTROL

mkdir -p "$out"
deb="$out/sonde_${version}_${arch}.deb"
case "$compress" in
    xz) dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >&2 ;;
    gzip) dpkg-deb --root-owner-group -Zgzip -z1 --build "$root" "$deb" >&2 ;;
    none) dpkg-deb --root-owner-group -Znone --build "$root" "$deb" >&2 ;;
    *) echo "package.sh: --compress $compress: xz, gzip or none" >&2; exit 2 ;;
esac
echo "$deb"
