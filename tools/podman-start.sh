#!/usr/bin/env bash
# Installs (Debian's podman) and starts Podman's Docker-compatible API
# service (`podman system service`) on /run/podman/podman.sock when it is not
# answering, then loads the test image into Podman. Used by scripts/test.sh
# (tests/agent_podman.rs).
#
# Environment: TAILOR_PODMAN_LOG (default /tmp/tailor-podman.log).
#
# Podman's default container rlimits (its built-in nofile/nproc values) are
# refused in some sandboxes ("error setting rlimit type 7: operation not
# permitted"), so /etc/containers/containers.conf sets explicit values below
# the current hard limits when it does not say so already.
#
# The test image: `docker save tailor-test:latest | podman load` (becomes
# localhost/tailor-test:latest) when Docker has it (tools/build-test-image.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

LOG="${TAILOR_PODMAN_LOG:-/tmp/tailor-podman.log}"
SOCK=/run/podman/podman.sock
CONF=/etc/containers/containers.conf
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

ping_podman() {
    curl -sf --max-time 2 --unix-socket "$SOCK" http://localhost/_ping >/dev/null 2>&1
}

if ! command -v podman >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1; then
    echo "podman-start: installing podman (Debian)"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q podman curl
fi

# explicit rlimits, at or below the hard limits of this shell
hard_nofile=$(ulimit -Hn)
hard_nproc=$(ulimit -Hu)
nofile=20000
nproc=4096
if [ "$hard_nofile" != unlimited ] && [ "$hard_nofile" -lt "$nofile" ]; then nofile=$hard_nofile; fi
if [ "$hard_nproc" != unlimited ] && [ "$hard_nproc" -lt "$nproc" ]; then nproc=$hard_nproc; fi
want="[containers]
default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=$nproc:$nproc\"]"
if [ "$(cat "$CONF" 2>/dev/null || true)" != "$want" ]; then
    if [ -s "$CONF" ] && ! grep -q '^# written by tailor tools/podman-start.sh' "$CONF"; then
        if grep -q 'default_ulimits' "$CONF"; then
            echo "podman-start: $CONF already sets default_ulimits; leaving it alone"
        else
            echo "podman-start: WARNING: $CONF exists without default_ulimits; not rewriting it" >&2
        fi
    else
        echo "podman-start: writing $CONF (default_ulimits nofile=$nofile nproc=$nproc)"
        $SUDO mkdir -p "$(dirname "$CONF")"
        printf '# written by tailor tools/podman-start.sh\n%s\n' "$want" | $SUDO tee "$CONF.tmp" >/dev/null
        $SUDO mv "$CONF.tmp" "$CONF"
    fi
fi

if ping_podman; then
    echo "podman-start: podman system service already answering on $SOCK"
else
    echo "podman-start: starting podman system service on $SOCK (log: $LOG)"
    $SUDO mkdir -p "$(dirname "$SOCK")"
    # setsid: the service must outlive the shell (and the test) that started it
    $SUDO setsid podman system service --time=0 "unix://$SOCK" >>"$LOG" 2>&1 </dev/null &
    for _ in $(seq 1 60); do
        if ping_podman; then break; fi
        sleep 0.5
    done
    if ! ping_podman; then
        echo "podman-start: podman system service failed to start; last log lines:" >&2
        tail -n 40 "$LOG" >&2 || true
        exit 1
    fi
fi

if $SUDO podman image exists localhost/tailor-test:latest; then
    echo "podman-start: test image localhost/tailor-test:latest present"
elif command -v docker >/dev/null 2>&1 && docker image inspect tailor-test:latest >/dev/null 2>&1; then
    echo "podman-start: loading tailor-test:latest from Docker into Podman"
    docker save tailor-test:latest | $SUDO podman load
else
    echo "podman-start: the test image is not in Docker; run tools/build-test-image.sh first" >&2
    exit 1
fi
echo "podman-start: podman is up"
