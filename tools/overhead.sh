#!/usr/bin/env bash
# Measures the agent's overhead: N managed containers (default 200) that
# keep running the whole time, sampled every INTERVAL_S (default 10 s) by the
# release `tailor agent` with the default forecaster and shaper; CPU time
# (utime + stime from /proc/PID/stat, all threads) and RSS of the agent
# process over a window that starts after a warm-up long enough for the
# forecasters to leave their fallback (the GP needs history + min_train =
# 25 samples, then refits cold every 25 samples).
#
#   [MODE=recommend|shape] [INTERVAL_S=10] [MEM_WATCH_S=1] [TAILOR_BIN=path] \
#       [PERF_S=60] tools/overhead.sh [CONTAINERS] [WARMUP_S] [MEASURE_S]
#
# Defaults: MODE=recommend, 200 containers, WARMUP_S=300, MEASURE_S=900.
# MEM_WATCH_S sets the agent's `mem_watch_s` (the memory watch between
# rounds, shape mode only; 0 turns it off); unset, the agent's default.
#
# Containers: tailor-test:latest running the load generator in a loop
# (LOADGEN_LOOP=1): memory ramps between 8 and 16 MiB (per-container period
# 60..180 s, so the forecasters see real variation) and 0.001 cores of CPU.
# Requests fit the node in both modes (64 MiB and 0.005 cores each, as a CFS
# quota of 5 ms per 1 s period: 200 containers ask 1 core and 12.5 GiB), so
# the shaper never has a reason to evict; in shape mode the agent really
# resizes them (memory; CPU stays at the agent's floor min_cpu_cores = 0.01,
# Docker's NanoCPUs minimum, which is above these requests).
#
# The number of running managed containers is checked every 30 s during the
# window (docker ps); the script fails if it ever drops below N.
# Optionally (PERF_S > 0 and perf installed) perf samples the whole machine
# for PERF_S seconds after the window (call graphs into $PERF_OUT, default
# /tmp/tailor-overhead.perf.data) and prints the agent's top symbols.
#
# The agent's log is kept in $AGENT_LOG (default /tmp/tailor-overhead-agent.log).
#
# Needs a running dockerd and the test image (scripts/test.sh or
# tools/dockerd-start.sh + tools/build-test-image.sh). Removes its
# containers at the end. Prints one summary line:
#   mode=... containers=200 running_min=200 ... interval_s=10 window_s=... rounds=...
#   actions_applied_total=... early_rounds_total=... (since the agent started:
#   resizes and evictions applied, rounds the memory watch ran early)
#   cpu_pct_of_one_core=... (CPU time / window)
#   cpu_ms_per_round=... cpu_pct_at_interval=... (CPU per round / interval: the
#   share of a core if rounds start exactly every interval; higher than the
#   first when rounds take longer than the interval)
#   round_wall_s=... (mean round duration) rss_mib=... hwm_mib=... (peak RSS)
set -euo pipefail
cd "$(dirname "$0")/.."

N="${1:-200}"
WARMUP_S="${2:-300}"
MEASURE_S="${3:-900}"
MODE="${MODE:-recommend}"
INTERVAL_S="${INTERVAL_S:-10}"
MEM_WATCH_S="${MEM_WATCH_S:-}"
PERF_S="${PERF_S:-0}"
PERF_OUT="${PERF_OUT:-/tmp/tailor-overhead.perf.data}"
PORT="${PORT:-19847}"
AGENT_LOG="${AGENT_LOG:-/tmp/tailor-overhead-agent.log}"
LABEL="tailor.test=overhead"
WORK="$(mktemp -d)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
case "$MODE" in recommend | shape) ;; *)
    echo "MODE must be recommend or shape" >&2
    exit 2
    ;;
esac

cleanup() {
    if [ -n "${AGENT_PID:-}" ]; then kill "$AGENT_PID" 2>/dev/null || true; wait "$AGENT_PID" 2>/dev/null || true; fi
    cp "$WORK/agent.log" "$AGENT_LOG" 2>/dev/null || true
    docker ps -aq --filter "label=$LABEL" | xargs -r docker rm -f >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

tools/build-test-image.sh >/dev/null
# TAILOR_BIN: measure an already built binary instead of building the release one
if [ -n "${TAILOR_BIN:-}" ]; then
    BIN="$TAILOR_BIN"
else
    cargo build --release --bin tailor >&2
    BIN="$CARGO_TARGET_DIR/release/tailor"
fi

running() { docker ps -q --filter "label=$LABEL" --filter status=running | wc -l; }

echo "starting $N containers..." >&2
docker ps -aq --filter "label=$LABEL" | xargs -r docker rm -f >/dev/null 2>&1 || true
start_one() {
    local i=$1 half=$((30 + ($1 % 7) * 15))
    docker run -d --network none --name "tailor-ovh-$i" \
        --memory 64m --memory-swap 64m --cpu-period 1000000 --cpu-quota 5000 \
        -e LOADGEN_LOOP=1 \
        --label tailor.enable=true --label "$LABEL" --label "tailor.app=app$((i % 20))" \
        --label tailor.class=elastic \
        tailor-test:latest /bin/loadgen "8:0.001:$half:ramp" "16:0.001:$half:ramp" >/dev/null
}
export -f start_one
export LABEL
seq 1 "$N" | xargs -P 4 -I{} bash -c 'start_one {}'
if [ "$(running)" -ne "$N" ]; then
    echo "only $(running) of $N containers are running" >&2
    exit 1
fi

cat > "$WORK/agent.toml" <<TOML
interval_s = $INTERVAL_S
actuation = "$MODE"
${MEM_WATCH_S:+mem_watch_s = $MEM_WATCH_S}
state_file = "$WORK/state.json"
[selector]
labels = { "tailor.test" = "overhead" }
[http]
listen = "127.0.0.1:$PORT"
TOML

"$BIN" config check "$WORK/agent.toml" >&2
uptime >&2
"$BIN" agent --config "$WORK/agent.toml" 2> "$WORK/agent.log" &
AGENT_PID=$!
sleep "$WARMUP_S"
if ! kill -0 "$AGENT_PID" 2>/dev/null; then
    echo "the agent died during the warm-up:" >&2
    tail -20 "$WORK/agent.log" >&2
    exit 1
fi
ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
metric() { curl -sf "http://127.0.0.1:$PORT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
DOCKERD_PID=$(cat /var/run/docker.pid 2>/dev/null || pgrep -xo dockerd || echo "")
rounds0=$(metric tailor_agent_rounds_total)
rsum0=$(metric tailor_agent_round_duration_seconds_sum)
errors0=$(metric tailor_agent_round_errors_total)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
c0=$(cpu_ticks "$AGENT_PID"); t0=$(date +%s.%N)
d0=$([ -n "$DOCKERD_PID" ] && cpu_ticks "$DOCKERD_PID" || echo 0)
running_min=$N
end=$(($(date +%s) + MEASURE_S))
while [ "$(date +%s)" -lt "$end" ]; do
    left=$((end - $(date +%s)))
    sleep $((left < 30 ? (left > 0 ? left : 0) : 30))
    r=$(running)
    if [ "$r" -lt "$running_min" ]; then running_min=$r; fi
done
c1=$(cpu_ticks "$AGENT_PID"); t1=$(date +%s.%N)
d1=$([ -n "$DOCKERD_PID" ] && cpu_ticks "$DOCKERD_PID" || echo 0)
load1=$(cut -d' ' -f1-3 /proc/loadavg)
rounds1=$(metric tailor_agent_rounds_total)
rsum1=$(metric tailor_agent_round_duration_seconds_sum)
errors1=$(metric tailor_agent_round_errors_total)
in_view=$(metric 'tailor_agent_managed_containers{state="running"}')
evicted=$(metric 'tailor_agent_managed_containers{state="evicted"}')
applied=$(curl -sf "http://127.0.0.1:$PORT/metrics" | awk '/^tailor_agent_actions_total/ && /result="applied"/ {s += $2} END {print s + 0}')
early=$(curl -sf "http://127.0.0.1:$PORT/metrics" | awk '/^tailor_agent_early_rounds_total/ {s += $2} END {print s + 0}')
rss_kib=$(awk '/VmRSS/ {print $2}' "/proc/$AGENT_PID/status")
hwm_kib=$(awk '/VmHWM/ {print $2}' "/proc/$AGENT_PID/status")
awk -v c0="$c0" -v c1="$c1" -v d0="$d0" -v d1="$d1" -v t0="$t0" -v t1="$t1" -v hz="$ticks" \
    -v rss="$rss_kib" -v hwm="$hwm_kib" -v n="$N" -v rmin="$running_min" -v mode="$MODE" \
    -v iv="$INTERVAL_S" -v rounds=$((rounds1 - rounds0)) -v failed=$((errors1 - errors0)) \
    -v rs0="$rsum0" -v rs1="$rsum1" -v inview="$in_view" -v evicted="$evicted" -v applied="$applied" -v early="$early" -v l0="$load0" -v l1="$load1" \
    'BEGIN { printf "mode=%s containers=%d running_min=%d in_view=%s evicted=%s interval_s=%s window_s=%.0f rounds=%d failed_rounds=%d actions_applied_total=%s early_rounds_total=%s cpu_pct_of_one_core=%.3f cpu_ms_per_round=%.1f cpu_pct_at_interval=%.3f round_wall_s=%.2f rss_mib=%.1f hwm_mib=%.1f dockerd_cpu_pct=%.2f load_start=\"%s\" load_end=\"%s\"\n", mode, n, rmin, inview, evicted, iv, t1 - t0, rounds, failed, applied, early, 100 * (c1 - c0) / hz / (t1 - t0), 1000 * (c1 - c0) / hz / (rounds > 0 ? rounds : 1), 100 * (c1 - c0) / hz / (rounds > 0 ? rounds : 1) / iv, (rs1 - rs0) / (rounds > 0 ? rounds : 1), rss / 1024, hwm / 1024, 100 * (d1 - d0) / hz / (t1 - t0), l0, l1 }'
if [ "$running_min" -lt "$N" ] || [ "${in_view:-0}" != "$N" ]; then
    echo "FAIL: not all $N managed containers kept running during the window (min $running_min, agent saw ${in_view:-?})" >&2
    exit 1
fi
if [ "$PERF_S" -gt 0 ] && command -v perf >/dev/null 2>&1; then
    # system-wide, then filtered to the agent: `perf record -p` misses the
    # short-lived spawn_blocking threads the forecasters run on
    perf record -a -g -F 499 -o "$PERF_OUT" -- sleep "$PERF_S" >/dev/null 2>&1 || true
    perf report -i "$PERF_OUT" --pid "$AGENT_PID" --no-children --sort dso,symbol --stdio 2>/dev/null \
        | grep -E '^ +[0-9.]+%' | head -40 || true
    echo "perf data: $PERF_OUT (perf report -i $PERF_OUT --pid $AGENT_PID)" >&2
fi
