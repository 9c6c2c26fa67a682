#!/usr/bin/env bash
# Builds the Debian package: target/debian/sidekicks_VERSION_ARCH.deb, holding the binary
# (/usr/bin/sidekicks), the systemd unit running it as the `sidekicks` system user, the
# example config as /etc/sidekicks/sidekicks.toml (a conffile), and the README. Installing
# it makes the user and gives the state and config folders their owners and modes.
#
# Usage: scripts/build-deb.sh [BINARY]   (without BINARY: a release build is made first)
# Needs dpkg-deb (Debian and its derivatives).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-}
if [ -z "$BIN" ]; then
    (cd "$ROOT" && cargo build --release --bin sidekicks)
    BIN="$ROOT/target/release/sidekicks"
fi
VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -n 1)
ARCH=$(dpkg --print-architecture)
OUT="$ROOT/target/debian"
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
# The package's root is the system's: 0755, as `/` is.
chmod 0755 "$STAGE"

install -D -m 0755 "$BIN" "$STAGE/usr/bin/sidekicks"
install -D -m 0644 "$ROOT/deploy/debian/sidekicks.service" "$STAGE/lib/systemd/system/sidekicks.service"
install -D -m 0640 "$ROOT/deploy/sidekicks.example.toml" "$STAGE/etc/sidekicks/sidekicks.toml"
install -D -m 0644 "$ROOT/README.md" "$STAGE/usr/share/doc/sidekicks/README.md"
install -D -m 0644 "$ROOT/deploy/sidekicks.example.toml" "$STAGE/usr/share/doc/sidekicks/examples/sidekicks.example.toml"

mkdir -p "$STAGE/DEBIAN"
cat > "$STAGE/DEBIAN/control" <<CONTROL
Package: sidekicks
Version: $VERSION
Architecture: $ARCH
Maintainer: Sidekicks developers <sidekicks@localhost>
Depends: adduser, bubblewrap, libc6
Recommends: git, nodejs, npm
Section: net
Priority: optional
Description: ACP coding agents in Matrix rooms
 Sidekicks is a gateway that brings ACP agents (Claude Code, Codex, Gemini CLI, your own)
 into Matrix rooms: each agent is a Matrix user, answers stream in as edits, tools are
 approved with reactions.
CONTROL
echo "/etc/sidekicks/sidekicks.toml" > "$STAGE/DEBIAN/conffiles"

cat > "$STAGE/DEBIAN/postinst" <<'SCRIPT'
#!/bin/sh
set -e
if [ "$1" = "configure" ]; then
    if ! getent passwd sidekicks >/dev/null; then
        adduser --system --group --home /var/lib/sidekicks --no-create-home \
            --gecos "Sidekicks" --quiet sidekicks
    fi
    mkdir -p /var/lib/sidekicks
    chown sidekicks:sidekicks /var/lib/sidekicks
    chmod 0700 /var/lib/sidekicks
    chown root:sidekicks /etc/sidekicks /etc/sidekicks/sidekicks.toml
    chmod 0750 /etc/sidekicks
    chmod 0640 /etc/sidekicks/sidekicks.toml
    if [ -d /run/systemd/system ]; then
        systemctl daemon-reload >/dev/null 2>&1 || true
    fi
fi
exit 0
SCRIPT
cat > "$STAGE/DEBIAN/prerm" <<'SCRIPT'
#!/bin/sh
set -e
if [ -d /run/systemd/system ] && [ "$1" = "remove" ]; then
    systemctl stop sidekicks >/dev/null 2>&1 || true
fi
exit 0
SCRIPT
cat > "$STAGE/DEBIAN/postrm" <<'SCRIPT'
#!/bin/sh
set -e
# Purging removes the state (sessions, transcripts, the agents' Matrix stores) and the
# config; the system user stays, as Debian does with system users.
if [ "$1" = "purge" ]; then
    rm -rf /var/lib/sidekicks /etc/sidekicks
fi
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || true
fi
exit 0
SCRIPT
chmod 0755 "$STAGE/DEBIAN/postinst" "$STAGE/DEBIAN/prerm" "$STAGE/DEBIAN/postrm"

mkdir -p "$OUT"
DEB="$OUT/sidekicks_${VERSION}_${ARCH}.deb"
# SIDEKICKS_DEB_COMPRESSION: xz (the default), gzip, zstd or none (the tests, for speed).
dpkg-deb --root-owner-group -Z"${SIDEKICKS_DEB_COMPRESSION:-xz}" --build "$STAGE" "$DEB" >/dev/null
echo "$DEB"
