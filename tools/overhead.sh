#!/usr/bin/env bash
# Measures the agent's overhead: N managed containers (default 200) sampled
# every 10 s by the release `tailor agent` (default forecaster and shaper),
# CPU time and RSS of the agent process read from /proc over a window after
# a warm-up.
#
#   [TAILOR_BIN=path/to/tailor] tools/overhead.sh [CONTAINERS] [WARMUP_S] [MEASURE_S]
#
# Needs a running dockerd and the test image (scripts/test.sh or
# tools/dockerd-start.sh + tools/build-test-image.sh). Removes its containers
# at the end. Prints one summary line:
#   containers=200 interval_s=10 cpu_pct_of_one_core=... rss_mib=... hwm_mib=...
set -euo pipefail
cd "$(dirname "$0")/.."

N="${1:-200}"
WARMUP_S="${2:-60}"
MEASURE_S="${3:-300}"
LABEL="tailor.test=overhead"
WORK="$(mktemp -d)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"

cleanup() {
    if [ -n "${AGENT_PID:-}" ]; then kill "$AGENT_PID" 2>/dev/null || true; wait "$AGENT_PID" 2>/dev/null || true; fi
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

echo "starting $N containers..." >&2
docker ps -aq --filter "label=$LABEL" | xargs -r docker rm -f >/dev/null 2>&1 || true
for i in $(seq 1 "$N"); do
    docker run -d --network none --name "tailor-ovh-$i" --memory 64m --memory-swap 64m --cpus 0.2 \
        --label tailor.enable=true --label "$LABEL" --label "tailor.app=app$((i % 20))" \
        tailor-test:latest /bin/loadgen "4:0.001:3600" >/dev/null
done

cat > "$WORK/agent.toml" <<TOML
interval_s = 10.0
state_file = "$WORK/state.json"
[selector]
labels = { "tailor.test" = "overhead" }
[http]
listen = "127.0.0.1:0"
TOML

"$BIN" agent --config "$WORK/agent.toml" 2> "$WORK/agent.log" &
AGENT_PID=$!
sleep "$WARMUP_S"
ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$AGENT_PID/stat"; }
c0=$(cpu_ticks); t0=$(date +%s.%N)
sleep "$MEASURE_S"
c1=$(cpu_ticks); t1=$(date +%s.%N)
rss_kib=$(awk '/VmRSS/ {print $2}' "/proc/$AGENT_PID/status")
hwm_kib=$(awk '/VmHWM/ {print $2}' "/proc/$AGENT_PID/status")
rounds=$(grep -c "round failed" "$WORK/agent.log" || true)
awk -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v hz="$ticks" -v rss="$rss_kib" -v hwm="$hwm_kib" -v n="$N" -v failed="$rounds" \
    'BEGIN { printf "containers=%d interval_s=10 window_s=%.0f cpu_pct_of_one_core=%.2f rss_mib=%.1f hwm_mib=%.1f failed_rounds=%d\n", n, t1 - t0, 100 * (c1 - c0) / hz / (t1 - t0), rss / 1024, hwm / 1024, failed }'
