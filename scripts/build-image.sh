#!/usr/bin/env bash
# Builds the container image (deploy/container/Containerfile) and smoke-tests it: the binary
# runs, as the unprivileged `sidekicks` user, with the state and workspace volumes declared,
# and `sidekicks check` passes inside it for the compose demo's config (the demo agent).
#
#   scripts/build-image.sh                      # compiles in the image (needs the Rust image)
#   scripts/build-image.sh --prebuilt BINARY    # takes BINARY instead (no Rust image needed)
#
# Settings, from the environment:
#   SIDEKICKS_CONTAINER_ENGINE  podman or docker (default: whichever is installed, podman first)
#   SIDEKICKS_IMAGE             the tag to build (default: sidekicks:local)
#   SIDEKICKS_DEBOOTSTRAP       1: where the Debian base image is missing and no registry can
#                               be reached, make it from Debian's packages (debootstrap, then
#                               import; needs root)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ENGINE=${SIDEKICKS_CONTAINER_ENGINE:-$(command -v podman || command -v docker || true)}
IMAGE=${SIDEKICKS_IMAGE:-sidekicks:local}
BASE=docker.io/library/debian:bookworm-slim
PREBUILT=

say() { printf '\033[1m%s\033[0m\n' "$*" >&2; }
fail() { printf 'FAILED: %s\n' "$*" >&2; exit 1; }

while [ $# -gt 0 ]; do
    case "$1" in
        --prebuilt) PREBUILT=$(realpath "$2"); shift 2 ;;
        *) fail "unknown argument $1 (see the top of $0)" ;;
    esac
done
[ -n "$ENGINE" ] || fail "neither podman nor docker is installed"

if [ "${SIDEKICKS_DEBOOTSTRAP:-}" = 1 ] && ! "$ENGINE" image inspect "$BASE" >/dev/null 2>&1; then
    say "Making $BASE from Debian's packages (debootstrap)…"
    ROOTFS=$(mktemp -d)
    debootstrap --variant=minbase bookworm "$ROOTFS" http://deb.debian.org/debian >&2
    tar -C "$ROOTFS" -c . | "$ENGINE" import - "$BASE" >&2
    rm -rf "$ROOTFS"
fi

CONTEXT=$ROOT
ARGS=()
if [ -n "$PREBUILT" ]; then
    # A context of its own: the binary and what the image copies, not the whole repository.
    CONTEXT=$(mktemp -d)
    trap 'rm -rf "$CONTEXT"' EXIT
    mkdir -p "$CONTEXT/target/release" "$CONTEXT/deploy"
    cp "$PREBUILT" "$CONTEXT/target/release/sidekicks"
    cp "$ROOT/deploy/sidekicks.example.toml" "$CONTEXT/deploy/"
    ARGS+=(--build-arg BINARY_FROM=prebuilt)
fi

say "Building $IMAGE with $ENGINE…"
"$ENGINE" build -f "$ROOT/deploy/container/Containerfile" --target runtime "${ARGS[@]}" \
    -t "$IMAGE" "$CONTEXT" >&2

say "Smoke-testing $IMAGE…"
version=$("$ENGINE" run --rm "$IMAGE" --version)
echo "version: $version"
case "$version" in sidekicks*) ;; *) fail "--version printed: $version" ;; esac

uid=$("$ENGINE" run --rm --entrypoint id "$IMAGE" -u)
echo "user: $uid"
[ "$uid" = 10001 ] || fail "the gateway runs as UID $uid, not the sidekicks user (10001)"

volumes=$("$ENGINE" image inspect --format '{{json .Config.Volumes}}' "$IMAGE")
echo "volumes: $volumes"
for v in /var/lib/sidekicks /workspaces; do
    case "$volumes" in *"\"$v\""*) ;; *) fail "no volume $v" ;; esac
done

modes=$("$ENGINE" run --rm --entrypoint stat "$IMAGE" -c '%n %a %U:%G' \
    /var/lib/sidekicks /workspaces /etc/sidekicks /etc/sidekicks/sidekicks.toml)
echo "$modes"
echo "$modes" | grep -qx '/var/lib/sidekicks 700 sidekicks:sidekicks' || fail "state folder: $modes"
echo "$modes" | grep -qx '/etc/sidekicks/sidekicks.toml 640 root:sidekicks' || fail "config: $modes"

# The compose demo's config, checked inside the image: the demo agent starts and answers.
report=$("$ENGINE" run --rm \
    -v "$ROOT/deploy/container/demo/sidekicks.toml:/etc/sidekicks/sidekicks.toml:ro" \
    "$IMAGE" check --config /etc/sidekicks/sidekicks.toml 2>&1) || fail "check failed: $report"
echo "$report"
echo "$report" | grep -q "session/new: ok" || fail "the demo agent opened no session"

size=$("$ENGINE" image inspect --format '{{.Size}}' "$IMAGE")
echo "image size: $((size / 1024 / 1024)) MiB"
say "The image works."
