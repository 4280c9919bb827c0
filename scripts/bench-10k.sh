#!/usr/bin/env bash
# The central shaper at 10,000 nodes: starts `tailor shaper` (release build,
# packaging/shaper.toml's settings on a loopback port) and plays AGENTS
# simulated agents x CONTAINERS containers reporting every INTERVAL_S
# seconds against it with the load generator, then prints the shaper's
# round latency (p50/p99/max, from its /metrics), CPU (cores, averaged over
# the run) and RSS (current and peak), and the client's report round trip.
#
#   scripts/bench-10k.sh                                # 10,000 x 100, 10 s, 120 s
#   AGENTS=1000 DURATION_S=90 scripts/bench-10k.sh      # the 100k-component point
#   TAILOR_BIN=target/debug/tailor scripts/bench-10k.sh # skip the release build
#
# The load generator runs on the same machine and competes with the shaper
# for CPU: pin them apart with SHAPER_CPUS / LOADGEN_CPUS (taskset lists)
# when there are cores to spare, and state the machine's load with the figures.
# SHAPER_LOG=FILE keeps the shaper's log (RUST_LOG=info: one line per round
# with its latency_s, planned_s (the part before the store and commit) and
# its phases view_s, decide_s and prepare_s).
# ETCD=1 runs the shaper with an [etcd] store: a local single-member etcd
# (`etcd` on PATH, Debian's etcd-server) under the temporary directory, so
# every round commits its plan and action records to etcd as in a
# replicated deployment.
# EARLY_AGENTS=N: N simulated agents, spread over the interval, send every
# report early (as a memory watch would), so the shaper plans a round for
# each, at most one per early_round_gap_s: the worst case of early rounds.
# ENCODING=auto|json: the agents' bodies (default auto: MessagePack once the
# shaper answers in it, as agents do); CALIBRATED=1: every forecast carries
# a calibration table, as a real agent's does (larger reports).
set -euo pipefail
cd "$(dirname "$0")/.."

AGENTS=${AGENTS:-10000}
CONTAINERS=${CONTAINERS:-100}
INTERVAL_S=${INTERVAL_S:-10}
DURATION_S=${DURATION_S:-120}
HOSTS_PER_APP=${HOSTS_PER_APP:-10}
PORT=${PORT:-19848}
ETCD=${ETCD:-0}
ETCD_PORT=${ETCD_PORT:-23790}
EARLY_AGENTS=${EARLY_AGENTS:-0}
ENCODING=${ENCODING:-auto}
CALIBRATED=${CALIBRATED:-0}
calibrated=(); [[ "$CALIBRATED" == 1 ]] && calibrated=(--calibrated)

if [[ -z "${TAILOR_BIN:-}" ]]; then
  cargo build --release --bin tailor
  TAILOR_BIN=target/release/tailor
fi
[[ -x "$TAILOR_BIN" ]] || { echo "bench-10k: no executable $TAILOR_BIN" >&2; exit 1; }

# taskset prefixes (empty when no CPU list is given); taskset execs the
# program, so $! below is the shaper's own pid.
shaper_pin=(); [[ -n "${SHAPER_CPUS:-}" ]] && shaper_pin=(taskset -c "$SHAPER_CPUS")
loadgen_pin=(); [[ -n "${LOADGEN_CPUS:-}" ]] && loadgen_pin=(taskset -c "$LOADGEN_CPUS")

dir=$(mktemp -d)
shaper_pid=""
etcd_pid=""
cleanup() {
  if [[ -n "$shaper_pid" ]]; then
    kill "$shaper_pid" 2>/dev/null || true
    wait "$shaper_pid" 2>/dev/null || true
  fi
  if [[ -n "$etcd_pid" ]]; then
    kill "$etcd_pid" 2>/dev/null || true
    wait "$etcd_pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT

# wait_ready URL PID LOG: until URL answers (10 s at most); the log and
# exit if PID dies first.
wait_ready() {
  for _ in $(seq 100); do
    curl -fsS "$1" >/dev/null 2>&1 && return 0
    kill -0 "$2" 2>/dev/null || { cat "$3" >&2; exit 1; }
    sleep 0.1
  done
}

"$TAILOR_BIN" shaper gen-token "$dir/token" >/dev/null
: > "$dir/credentials.toml"
chmod 600 "$dir/credentials.toml"
components=$((AGENTS * CONTAINERS))
sed -e "s#^listen = .*#listen = \"127.0.0.1:$PORT\"#" \
    -e "s#^token_file = .*#token_file = \"$dir/token\"#" \
    -e "s#^credentials_file = .*#credentials_file = \"$dir/credentials.toml\"#" \
    -e "s#^interval_s = .*#interval_s = $INTERVAL_S#" \
    -e "s#^max_agents = .*#max_agents = $((AGENTS > 10000 ? AGENTS : 10000))#" \
    -e "s#^max_components_per_tenant = .*#max_components_per_tenant = $((components > 1000000 ? components : 1000000))#" \
    -e "s#^max_components_total = .*#max_components_total = $((components > 1000000 ? components : 1000000))#" \
    -e "s#^max_state_mem_bytes = .*#max_state_mem_bytes = 8589934592#" \
    packaging/shaper.toml > "$dir/shaper.toml"

if [[ "$ETCD" == 1 ]]; then
  command -v etcd >/dev/null || { echo "bench-10k: ETCD=1 needs etcd on PATH (apt-get install etcd-server)" >&2; exit 1; }
  etcd --name=bench --data-dir="$dir/etcd" \
    --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-advertise-peer-urls="http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-cluster="bench=http://127.0.0.1:$((ETCD_PORT + 1))" \
    --quota-backend-bytes=8589934592 > "$dir/etcd.log" 2>&1 &
  etcd_pid=$!
  wait_ready "http://127.0.0.1:$ETCD_PORT/health" "$etcd_pid" "$dir/etcd.log"
  # The [etcd] table goes before [shaper] (TOML: a table runs to the next).
  awk -v port="$ETCD_PORT" -v me="$PORT" '
    /^\[shaper\]/ && !done {
      print "[etcd]"; print "endpoints = [\"http://127.0.0.1:" port "\"]"
      print "prefix = \"/bench\""; print "advertise_url = \"http://127.0.0.1:" me "\""; print ""
      done = 1
    }
    { print }' "$dir/shaper.toml" > "$dir/shaper-etcd.toml"
  mv "$dir/shaper-etcd.toml" "$dir/shaper.toml"
fi

echo "bench-10k: $AGENTS agents x $CONTAINERS containers every $INTERVAL_S s for $DURATION_S s; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
log=${SHAPER_LOG:-$dir/shaper.log}
RUST_LOG=${RUST_LOG:-warn} "${shaper_pin[@]}" "$TAILOR_BIN" shaper --config "$dir/shaper.toml" 2> "$log" &
shaper_pid=$!
wait_ready "http://127.0.0.1:$PORT/healthz" "$shaper_pid" "$log"

"${loadgen_pin[@]}" "$TAILOR_BIN" shaper loadgen --url "http://127.0.0.1:$PORT" \
  --token-file "$dir/token" --credentials-file "$dir/credentials.toml" \
  --agents "$AGENTS" --containers "$CONTAINERS" --interval-s "$INTERVAL_S" \
  --duration-s "$DURATION_S" --hosts-per-app "$HOSTS_PER_APP" --early-agents "$EARLY_AGENTS" \
  --encoding "$ENCODING" "${calibrated[@]}"
echo "shaper peak RSS (VmHWM): $(awk '/VmHWM/ {print $2, $3}' "/proc/$shaper_pid/status")"
if [[ -n "$etcd_pid" ]]; then
  echo "etcd peak RSS (VmHWM): $(awk '/VmHWM/ {print $2, $3}' "/proc/$etcd_pid/status"); data dir $(du -sh "$dir/etcd" | cut -f1)"
fi
echo "machine load after the run: $(cut -d' ' -f1-3 /proc/loadavg)"
