#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs and starts what it needs.
#
# 1. dockerd: installed from Debian (docker.io) when missing and started in the
#    background (log: /tmp/tailor-dockerd.log) when not running
#    (tools/dockerd-start.sh).
# 2. The Docker test image tailor-test:latest, built with `docker import` from
#    busybox-static + tools/loadgen.c (tools/build-test-image.sh).
#    promtool (Debian's `prometheus` package) for tests/cluster_hardening.rs,
#    installed when missing; that test FAILS when CI=true and it is missing.
#    etcd (Debian's `etcd-server`, /usr/bin/etcd) for tests/cluster_etcd.rs
#    and tests/etcd_store.rs (each test starts its own three-member cluster
#    on loopback), installed when missing; those tests FAIL when CI=true and
#    it is missing.
#    User-Mode Linux (Debian's `user-mode-linux`, /usr/bin/linux.uml) for
#    agent/tests/cgroup_v2_uml.rs (the agent's cgroup v2 reads on a real
#    kernel: this host is cgroup v1) and for step 5, installed when
#    missing; both FAIL when CI=true and it is missing.
# 3. cargo fmt --all --check and cargo clippy --workspace --all-targets
#    -- -D warnings.
# 4. cargo test --workspace --all-targets, then the doc examples
#    (cargo test --doc --workspace).
#    systemd-analyze (Debian's systemd) for the .deb test, when missing.
# 5. The agent's real-dockerd tests again on cgroup v2: dockerd and the
#    test executables inside User-Mode Linux (tools/uml-docker.sh, about 15
#    minutes; logs in target/uml-docker/).
# 6. With the full traces in ../shared/data (CI always has them): the heavy
#    thesis check on Google 2011 part 0 (GP, #[ignore]d in the suite above:
#    run alone, so that it has both cores). The dev profile is optimized
#    (dependencies at opt-level 3, ours at 1): it runs in ~115 s against ~98 s
#    in release, and saves a release build of ~4 minutes.
#
# The Docker integration tests (tests/agent_*.rs, tests/cluster_*.rs) FAIL
# when CI=true and Docker is unavailable; outside CI they skip loudly. So a
# failure of steps 1-2 is reported but does not stop the run here: the tests
# then say what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! tools/dockerd-start.sh; then
    echo "test.sh: WARNING: could not start dockerd; Docker tests will fail in CI / skip outside it" >&2
fi
if ! tools/build-test-image.sh; then
    echo "test.sh: WARNING: could not build the test image; Docker tests will fail in CI / skip outside it" >&2
fi
if ! tools/podman-start.sh; then
    echo "test.sh: WARNING: could not start podman; Podman tests will fail in CI / skip outside it" >&2
fi
if ! command -v promtool >/dev/null 2>&1; then
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus; } >/tmp/tailor-promtool-install.log 2>&1; then
        echo "test.sh: WARNING: could not install promtool (log: /tmp/tailor-promtool-install.log); the promtool test will fail in CI / skip outside it" >&2
    fi
fi

if ! command -v etcd >/dev/null 2>&1 && [ ! -x /usr/bin/etcd ]; then
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-server; } >/tmp/tailor-etcd-install.log 2>&1; then
        echo "test.sh: WARNING: could not install etcd-server (log: /tmp/tailor-etcd-install.log); the etcd cluster test will fail in CI / skip outside it" >&2
    fi
fi

if [ ! -x /usr/bin/linux.uml ]; then
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends user-mode-linux; } >/tmp/tailor-uml-install.log 2>&1; then
        echo "test.sh: WARNING: could not install user-mode-linux (log: /tmp/tailor-uml-install.log); the cgroup v2 test will fail in CI / skip outside it" >&2
    fi
fi

# The Debian package test (tests/package_deb.rs: dpkg -i, systemd-analyze
# verify, dpkg -r/-P) needs systemd-analyze: Debian's systemd package.
if ! command -v systemd-analyze >/dev/null 2>&1; then
    echo "test.sh: installing Debian's systemd (for systemd-analyze)"
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    { $SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q systemd; } \
        || echo "test.sh: WARNING: could not install systemd; the package test will fail in CI / skip outside it" >&2
fi

status=0
cargo fmt --all --check || { echo "test.sh: cargo fmt --check failed" >&2; status=1; }
cargo clippy --workspace --all-targets -- -D warnings || { echo "test.sh: clippy failed" >&2; status=1; }
cargo test --workspace --all-targets --no-fail-fast || status=$?
cargo test --doc --workspace || status=$?
tools/uml-docker.sh || status=$?

if [ -d ../shared/data/google-2011 ]; then
    cargo test --test replay_thesis -- --ignored || status=$?
else
    echo "test.sh: skipped the heavy part-0 thesis check: ../shared/data not found"
fi
exit "$status"
