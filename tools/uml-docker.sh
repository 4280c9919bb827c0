#!/usr/bin/env bash
# The agent's real-dockerd tests on cgroup v2. The suite's machines are
# cgroup v1 (hybrid) hosts; this boots a cgroup v2 kernel as a process,
# Debian's User-Mode Linux (`user-mode-linux`, Linux 6.1: no virtualisation
# needed), with the host's root file system as its own (hostfs), starts
# Debian's dockerd in it (the host's binary, cgroupfs driver on the unified
# hierarchy) and runs the given integration test executables there, as they
# run on the host, against that dockerd.
#
#   tools/uml-docker.sh [TEST_TARGET...]
#
# Default targets: agent_docker agent_unlimited_docker
# agent_restore_docker, less the tests in SKIP (about 14 minutes).
#
# The executables run one after the other, one test at a time. The kernel
# has one CPU, counts CPU time by 10 ms ticks, and a page fault there costs
# the host a system call: a test container's memory grows more slowly than
# on the host and rounds take longer. So the tests whose point is a race
# between a memory ramp timed in wall seconds and the agent's rounds stay
# on the host (SKIP, and agent_watch_docker): in trial runs here each
# failed once in two or three for reasons of time (the idle phase ended
# before the rounds had cut; no overload before the end; the ramp never
# outran a round). Two tests at a time failed once more
# (`stats_read_from_the_cgroup_agree_with_dockers_answer`, since made to
# wait for a tick), and so did agent_throttled_docker once in three runs
# (the quiet neighbour, cut to 0.14 cores, was throttled by 10 ms ticks).
# The reads those tests rely on are checked on cgroup v2
# by agent/tests/cgroup_v2_uml.rs, and a ramp's limit raised ahead of it
# by `default_forecaster_cuts_idle_limits_and_raises_a_ramp_ahead`.
#
# Inside the kernel (only there: the host's mounts do not change):
# - tmpfs on /run, so dockerd's socket is /var/run/docker.sock as the
#   tests expect, and on the data root (target/uml-docker/data);
# - dockerd runs in a cgroup of its own (init.scope), not in the root, as
#   under systemd: from the root cgroup it would find no swap limit
#   (`memory.swap.max` exists only below the root);
# - no bridge and no iptables (the kernel's modules are not on the host's
#   module path): the test containers have loopback only, which is all
#   they need; storage driver vfs;
# - the test image is built by tools/build-test-image.sh against that
#   dockerd.
#
# Needs: /usr/bin/linux.uml, dockerd (Debian's docker.io), the test
# executables (built here with `cargo test --no-run`). Without
# linux.uml: exits 1 when CI=true, else says SKIPPED and exits 0.
# Output: each executable's test output; logs in target/uml-docker/
# (console.log, dockerd.log, image.log, tests.log). Exit status: 0 when
# every executable passed.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
UML=/usr/bin/linux.uml
GUARD_S="${GUARD_S:-3600}"

if [ ! -x "$UML" ]; then
    if [ "${CI:-}" = true ]; then
        echo "uml-docker: $UML missing (Debian's user-mode-linux): the cgroup v2 Docker tests cannot run in CI" >&2
        exit 1
    fi
    echo "uml-docker: SKIPPED: $UML missing (apt-get install user-mode-linux)" >&2
    exit 0
fi
DOCKERD="$(command -v dockerd || true)"
[ -n "$DOCKERD" ] || { echo "uml-docker: dockerd missing (tools/dockerd-start.sh installs docker.io)" >&2; exit 1; }

if [ "$#" -eq 0 ]; then
    set -- agent_docker agent_unlimited_docker agent_restore_docker
fi
SKIP=(--skip memory_ramp_gets_its_limit_raised_ahead_of_usage
    --skip overload_evicts_youngest_elastic_of_last_app_and_restarts_it)
ARGS=()
for t in "$@"; do ARGS+=(--test "$t"); done
mapfile -t BUILT < <(cargo test "${ARGS[@]}" --no-run --message-format=json \
    | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "test" in m["target"]["kind"]:
        print(m["executable"])
')
# in the order given (cargo lists them in its own)
EXES=()
for t in "$@"; do
    for exe in "${BUILT[@]}"; do
        case "${exe##*/}" in "$t"-*) EXES+=("$exe") ;; esac
    done
done
if [ "${#EXES[@]}" -ne "$#" ]; then
    echo "uml-docker: found ${#EXES[@]} test executables for $# targets ($*)" >&2
    exit 1
fi

WORK="$REPO/target/uml-docker"
rm -rf "$WORK"
mkdir -p "$WORK/data"
q() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
{
    echo '#!/bin/sh'
    echo '# init of the kernel tools/uml-docker.sh boots'
    echo 'export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    echo 'mount -t proc proc /proc'
    echo 'mount -t sysfs sysfs /sys'
    echo 'mount -t cgroup2 cgroup2 /sys/fs/cgroup'
    echo 'mount -t tmpfs tmpfs /run'
    echo "mount -t tmpfs tmpfs $(q "$WORK/data")"
    echo 'mkdir /sys/fs/cgroup/init.scope && echo $$ > /sys/fs/cgroup/init.scope/cgroup.procs'
    echo 'ip link set lo up 2>/dev/null'
    echo "$(q "$DOCKERD") --data-root $(q "$WORK/data") --storage-driver=vfs --bridge=none --iptables=false --ip6tables=false > $(q "$WORK/dockerd.log") 2>&1 &"
    echo 'i=0; until docker info >/dev/null 2>&1; do i=$((i + 1)); [ $i -lt 120 ] || break; sleep 1; done'
    echo 'rc=1'
    echo "if (cd $(q "$REPO") && tools/build-test-image.sh) > $(q "$WORK/image.log") 2>&1; then"
    echo '    rc=0'
    for exe in "${EXES[@]}"; do
        echo "    CI=true $(q "$exe") --test-threads=1 ${SKIP[*]} >> $(q "$WORK/tests.log") 2>&1 || rc=1"
    done
    echo 'fi'
    echo "echo \$rc > $(q "$WORK/rc")"
    echo 'sync'
    echo 'echo o > /proc/sysrq-trigger'
    echo 'sleep 60'
} > "$WORK/init.sh"
chmod +x "$WORK/init.sh"

echo "uml-docker: ${EXES[*]##*/} on cgroup v2 (User-Mode Linux)" >&2
start=$(date +%s)
timeout --kill-after=10 "$GUARD_S" "$UML" mem=1536M root=/dev/root rootfstype=hostfs rootflags=/ rw \
    "init=$WORK/init.sh" con=null con0=fd:0,fd:1 < /dev/null > "$WORK/console.log" 2>&1 || true
cat "$WORK/tests.log" 2>/dev/null || true
rc="$(cat "$WORK/rc" 2>/dev/null || echo missing)"
echo "uml-docker: exit status $rc after $(( $(date +%s) - start )) s (logs: $WORK)" >&2
if [ "$rc" != 0 ]; then
    [ -s "$WORK/image.log" ] && tail -20 "$WORK/image.log" >&2
    tail -40 "$WORK/console.log" >&2
    exit 1
fi
