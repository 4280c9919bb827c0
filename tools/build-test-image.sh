#!/usr/bin/env bash
# Builds the test image `tailor-test:latest` with `docker import` (no registry
# needed): a root filesystem holding Debian's busybox-static and the project's
# load generator (tools/loadgen.c, compiled with gcc -static).
#
#   tools/build-test-image.sh [--force]
#
# Rebuilds only when the image is missing or --force is given.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE="${TAILOR_TEST_IMAGE:-tailor-test:latest}"
if [ "${1:-}" != "--force" ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
    echo "build-test-image: $IMAGE already present"
    exit 0
fi

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
BUSYBOX=""
for b in /bin/busybox /usr/bin/busybox; do
    if [ -x "$b" ] && file -L "$b" 2>/dev/null | grep -q "statically linked"; then BUSYBOX="$b"; break; fi
done
if [ -z "$BUSYBOX" ] || ! command -v gcc >/dev/null 2>&1 || ! command -v file >/dev/null 2>&1; then
    echo "build-test-image: installing busybox-static, gcc, libc6-dev, file"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q busybox-static gcc libc6-dev file
    BUSYBOX=/bin/busybox
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/rootfs/bin" "$WORK/rootfs/tmp" "$WORK/rootfs/proc" "$WORK/rootfs/sys" "$WORK/rootfs/dev" "$WORK/rootfs/etc"
cp "$BUSYBOX" "$WORK/rootfs/bin/busybox"
for applet in sh sleep cat echo ls ps top free head tail dd yes true false kill env; do
    ln -s busybox "$WORK/rootfs/bin/$applet"
done
gcc -static -O2 -Wall -o "$WORK/rootfs/bin/loadgen" tools/loadgen.c
echo "root:x:0:0:root:/:/bin/sh" > "$WORK/rootfs/etc/passwd"
tar -C "$WORK/rootfs" -c . | docker import -c 'CMD ["/bin/loadgen", "4:0:1"]' - "$IMAGE" >/dev/null
# smoke test: the image runs and the load generator starts
docker run --rm --network none "$IMAGE" /bin/sh -c '/bin/loadgen 1:0:0 & sleep 0.3; kill $!' >/dev/null
echo "build-test-image: built $IMAGE"
