#!/usr/bin/env bash
# Installs (Debian's docker.io) and starts dockerd when it is not running,
# then waits for its socket. Used by scripts/test.sh and by the dockerd
# restart test (which stops the daemon and calls this again).
#
# Environment: TAILOR_DOCKERD_LOG (default /tmp/tailor-dockerd.log).
# The daemon runs with --iptables=false --bridge=none (tests use
# --network none), so it needs no netfilter; if overlay2 does not work on
# this kernel it is restarted with the vfs storage driver.
set -euo pipefail

LOG="${TAILOR_DOCKERD_LOG:-/tmp/tailor-dockerd.log}"
SOCK=/var/run/docker.sock
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

ping_docker() {
    curl -sf --max-time 2 --unix-socket "$SOCK" http://localhost/_ping >/dev/null 2>&1
}

if ping_docker; then
    echo "dockerd-start: dockerd already running"
    exit 0
fi

if ! command -v dockerd >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1; then
    echo "dockerd-start: installing docker.io (Debian)"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q docker.io curl
fi

start_daemon() {
    local driver_args=("$@")
    echo "dockerd-start: starting dockerd ${driver_args[*]:-} (log: $LOG)"
    # setsid: the daemon must outlive the shell (and the test) that started it
    $SUDO setsid dockerd --iptables=false --ip-masq=false --bridge=none "${driver_args[@]}" >>"$LOG" 2>&1 < /dev/null &
    for _ in $(seq 1 60); do
        if ping_docker; then return 0; fi
        sleep 0.5
    done
    return 1
}

stop_daemon() {
    if [ -f /var/run/docker.pid ]; then
        $SUDO kill "$(cat /var/run/docker.pid)" 2>/dev/null || true
        for _ in $(seq 1 40); do
            [ -f /var/run/docker.pid ] || break
            sleep 0.5
        done
    fi
}

if [ -n "${TAILOR_DOCKERD_STORAGE_DRIVER:-}" ]; then
    start_daemon --storage-driver "$TAILOR_DOCKERD_STORAGE_DRIVER"
elif ! start_daemon; then
    echo "dockerd-start: dockerd did not come up with the default storage driver; retrying with vfs"
    tail -n 20 "$LOG" || true
    stop_daemon
    start_daemon --storage-driver vfs
fi

if ! ping_docker; then
    echo "dockerd-start: dockerd failed to start; last log lines:" >&2
    tail -n 40 "$LOG" >&2 || true
    exit 1
fi
echo "dockerd-start: dockerd is up"
