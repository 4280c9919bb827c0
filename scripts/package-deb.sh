#!/usr/bin/env bash
# Builds target/debian/tailor_<version>_<arch>.deb with dpkg-deb (no
# downloads, no debhelper). Contents:
#   /usr/bin/tailor
#   /lib/systemd/system/tailor-agent.service   (packaging/, Type=notify, User=tailor)
#   /etc/tailor/agent.toml                     (packaging/, recommend mode; a conffile)
#   /usr/share/doc/tailor/{copyright,README.md,docs/*.md,examples/shaper.toml}
# Maintainer scripts: postinst creates the `tailor` system user (added to the
# `docker` group when it exists) and /var/lib/tailor; the unit is not enabled
# or started (`systemctl enable --now tailor-agent`); prerm stops it; purge
# removes /var/lib/tailor.
#
# Environment:
#   TAILOR_BIN      binary to package (default: target/release/tailor, built
#                   with `cargo build --release --locked` when missing)
#   TAILOR_DEB_OUT  output directory (default: target/debian)
# Prints the path of the .deb on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "package-deb: $*" >&2; exit 1; }
command -v dpkg-deb >/dev/null || die "dpkg-deb not found (Debian's dpkg package)"
command -v dpkg >/dev/null || die "dpkg not found"

version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)"
[ -n "$version" ] || die "no version in Cargo.toml [workspace.package]"
arch="$(dpkg --print-architecture)"
out_dir="${TAILOR_DEB_OUT:-target/debian}"

bin="${TAILOR_BIN:-}"
if [ -z "$bin" ]; then
    bin=target/release/tailor
    if [ ! -x "$bin" ]; then
        echo "package-deb: building $bin (cargo build --release --locked)" >&2
        cargo build --release --locked --bin tailor >&2
    fi
fi
[ -x "$bin" ] || die "binary $bin not found or not executable"
# The package must not pull fontconfig/freetype (plots use an embedded font).
if ldd "$bin" 2>/dev/null | grep -Eiq 'fontconfig|freetype'; then
    die "$bin links fontconfig or freetype: $(ldd "$bin" | grep -Ei 'fontconfig|freetype' | tr '\n' ' ')"
fi
grep -Eq '^actuation *= *"recommend"' packaging/agent.toml \
    || die "packaging/agent.toml must ship actuation = \"recommend\""

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
root="$stage/root"
install -d "$root/DEBIAN" "$root/usr/bin" "$root/lib/systemd/system" "$root/etc/tailor" \
    "$root/usr/share/doc/tailor/examples" "$root/usr/share/doc/tailor/docs"
install -m 0755 "$bin" "$root/usr/bin/tailor"
# debug info stays out of the package (a debug build is hundreds of MB)
if command -v strip >/dev/null; then strip --strip-debug "$root/usr/bin/tailor"; fi
install -m 0644 packaging/tailor-agent.service "$root/lib/systemd/system/tailor-agent.service"
install -m 0644 packaging/agent.toml "$root/etc/tailor/agent.toml"
install -m 0644 packaging/shaper.toml "$root/usr/share/doc/tailor/examples/shaper.toml"
install -m 0644 README.md "$root/usr/share/doc/tailor/README.md"
install -m 0644 docs/*.md "$root/usr/share/doc/tailor/docs/"

# Debian machine-readable copyright: tailor (Apache-2.0) and the font
# embedded in the binary (DejaVu Sans, Bitstream Vera licence).
{
    cat <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: tailor

Files: *
Copyright: the tailor authors
License: Apache-2.0

Files: sim/assets/DejaVuSans.ttf
Copyright: Copyright (c) 2003 by Bitstream, Inc. All Rights Reserved.
 Bitstream Vera is a trademark of Bitstream, Inc.
 DejaVu changes are in public domain.
Comment: DejaVu Sans 2.37 (Debian fonts-dejavu-core), embedded in
 /usr/bin/tailor for the text of its plots.
License: bitstream-vera
EOF
    # the font's licence text, indented as a copyright-format block
    sed -n '/^Permission is hereby granted/,$p' sim/assets/DejaVuSans-LICENSE.txt \
        | sed 's/^$/./; s/^/ /'
    echo
    echo "License: Apache-2.0"
    sed 's/^[[:space:]]*$/./; s/^/ /' LICENSE
} > "$root/usr/share/doc/tailor/copyright"
chmod 0644 "$root/usr/share/doc/tailor/copyright"

echo "/etc/tailor/agent.toml" > "$root/DEBIAN/conffiles"

installed_kib="$(du -sk --exclude=DEBIAN "$root" | cut -f1)"
cat > "$root/DEBIAN/control" <<EOF
Package: tailor
Version: $version
Architecture: $arch
Maintainer: tailor developers <tailor@localhost>
Installed-Size: $installed_kib
Depends: libc6, libgcc-s1, adduser
Recommends: docker.io | podman-docker
Section: admin
Priority: optional
Description: forecast-driven container right-sizing
 tailor forecasts each container's CPU and memory online and resizes it to
 forecast + a safety buffer; when a host no longer fits it evicts
 deliberately, cheapest work first (pessimistic preemption).
 .
 This package ships the tailor binary, the node agent's systemd unit
 (tailor-agent.service, not enabled on install) and /etc/tailor/agent.toml
 in recommend mode: the agent computes and exports recommendations and
 changes nothing until actuation = "shape".
EOF

cat > "$root/DEBIAN/postinst" <<'EOF'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
    if ! getent passwd tailor >/dev/null; then
        adduser --system --group --home /var/lib/tailor --no-create-home \
            --gecos "tailor agent" tailor >/dev/null
    fi
    if getent group docker >/dev/null; then
        adduser tailor docker >/dev/null
    else
        echo "tailor: no 'docker' group yet: after installing Docker run 'adduser tailor docker'" >&2
    fi
    install -d -o tailor -g tailor -m 0750 /var/lib/tailor
    if [ -d /run/systemd/system ]; then
        systemctl daemon-reload >/dev/null 2>&1 || true
    fi
    echo "tailor: start the agent (recommend mode) with: systemctl enable --now tailor-agent" >&2
fi
exit 0
EOF

cat > "$root/DEBIAN/prerm" <<'EOF'
#!/bin/sh
set -e
if [ -d /run/systemd/system ] && [ "$1" = remove ]; then
    systemctl disable --now tailor-agent.service >/dev/null 2>&1 || true
fi
exit 0
EOF

cat > "$root/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || true
fi
if [ "$1" = purge ]; then
    rm -rf /var/lib/tailor
fi
exit 0
EOF
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"

mkdir -p "$out_dir"
deb="$out_dir/tailor_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zgzip --build "$root" "$deb" >&2
echo "$deb"
