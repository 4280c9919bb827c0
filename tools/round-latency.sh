#!/usr/bin/env bash
# Measures how long the agent's rounds take on the real dockerd, and the CPU
# dockerd and the agent spend meanwhile: N containers of tailor-test:latest
# (labelled tailor.enable=true, 128 MiB, 0.5 cores, 20 MiB and 0.05 cores
# of load each), one `tailor agent` in recommend mode at INTERVAL_S for
# SECONDS, then its /metrics (tailor_agent_round_duration_seconds) and
# utime + stime from /proc/PID/stat of dockerd and of the agent.
#
#   [TAILOR_BIN=path] [INTERVAL_S=2] [PORT=19847] \
#       tools/round-latency.sh [CONTAINERS] [SECONDS]
#
# Defaults: target/release/tailor, 20 containers, 41 s. Prints one line:
#   rounds=R round_mean_ms=M dockerd_cpu_s=D agent_cpu_s=A bin=B
# Needs dockerd running (tools/dockerd-start.sh) and the test image
# (tools/build-test-image.sh). The containers are removed at the end.
set -euo pipefail

N="${1:-20}"
SECONDS_RUN="${2:-41}"
BIN="${TAILOR_BIN:-target/release/tailor}"
INTERVAL_S="${INTERVAL_S:-2}"
PORT="${PORT:-19847}"
DIR="$(mktemp -d)"
PREFIX="tailor-rl-$$"

cleanup() {
    [ -n "${AGENT:-}" ] && kill "$AGENT" 2>/dev/null && wait "$AGENT" 2>/dev/null
    for i in $(seq 1 "$N"); do docker rm -f "$PREFIX-$i" >/dev/null 2>&1 || true; done
    rm -rf "$DIR"
}
trap cleanup EXIT

for i in $(seq 1 "$N"); do
    docker run -d --name "$PREFIX-$i" --network none --memory 128m --cpus 0.5 \
        --label tailor.enable=true tailor-test:latest /bin/loadgen 20:0.05:3600 >/dev/null
done

cat >"$DIR/agent.toml" <<EOF
mode = "standalone"
actuation = "recommend"
interval_s = $INTERVAL_S
warmup_rounds = 1
state_file = "$DIR/state/agent-state.json"
host_lock = ""
[http]
listen = "127.0.0.1:$PORT"
EOF
mkdir -p "$DIR/state"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
DOCKERD="$(pgrep -x dockerd | head -1)"
HZ="$(getconf CLK_TCK)"

d0="$(cpu_ticks "$DOCKERD")"
"$BIN" agent --config "$DIR/agent.toml" >"$DIR/agent.log" 2>&1 &
AGENT=$!
sleep "$SECONDS_RUN"
d1="$(cpu_ticks "$DOCKERD")"
a1="$(cpu_ticks "$AGENT")"
metrics="$(curl -sf "http://127.0.0.1:$PORT/metrics")"
sum="$(awk '/^tailor_agent_round_duration_seconds_sum/ {print $2}' <<<"$metrics")"
count="$(awk '/^tailor_agent_round_duration_seconds_count/ {print $2}' <<<"$metrics")"
awk -v s="$sum" -v c="$count" -v d=$((d1 - d0)) -v a="$a1" -v hz="$HZ" -v b="$BIN" 'BEGIN {
    printf "rounds=%d round_mean_ms=%.1f dockerd_cpu_s=%.2f agent_cpu_s=%.2f bin=%s\n",
        c, 1000 * s / c, d / hz, a / hz, b
}'
