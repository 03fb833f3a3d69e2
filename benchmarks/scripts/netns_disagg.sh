#!/usr/bin/env bash
# Disaggregation across hosts on one machine (docs/benchmarks.md, "Across a real network"): etcd,
# the frontend and the load generator on host tdm-front, a prefill worker on tdm-prefill (CPU 0),
# a decode worker on tdm-decode (CPU 1), each in its own network namespace with its own address,
# all found through etcd (benchmarks/scripts/netns.sh). What the prefill host sends is shaped with
# tc tbf at each RATE. For each KV backend and rate, the frontend runs once per --disagg mode:
#   auto    the policy's choice, from the link the decode worker measured when it joined
#   always  forced split;  never  forced local prefill
# and dev.tandem.bench.Interference measures: STREAMS steady streams, then a LONG-token prompt;
# its TTFT, the streams' largest gap, the KV moved and its window, and a hash of the greedy output.
#   sudo benchmarks/scripts/netns_disagg.sh [out-dir]
#   (MODEL=llama-100m STREAMS=1 LONG=1500 RATES="10mbit 100mbit 1gbit" BACKENDS="tcp ucx" MODES="auto always never")
# BACKENDS=auto runs ucx and tcp in each worker and lets the router choose per pull; RATES may
# include "none" (the bridge unshaped).
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-netns}"
shape="${MODEL:-llama-100m}"
streams="${STREAMS:-1}"
long="${LONG:-1500}"
rates="${RATES:-10mbit 100mbit 1gbit}"
backends="${BACKENDS:-tcp ucx}"
modes="${MODES:-auto always never}"
[ "$(id -u)" = 0 ] || { echo "netns_disagg: needs root (ip netns, tc)" >&2; exit 1; }
command -v etcd >/dev/null || { echo "netns_disagg: needs etcd (apt-get install etcd-server)" >&2; exit 1; }
cache="${TANDEM_CACHE:-$HOME/.cache/tandem}/bench-models"
mkdir -p "$out" "$cache"
./tandem --version >/dev/null  # builds if stale
model="$cache/$shape"
[ -f "$model/config.json" ] || ./tandem model create --shape "$shape" --seed 1 --dtype bf16 --out "$model" >/dev/null
java=("$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow)
cp="$PWD/cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:$PWD/cli/target/lib/*"
etcd_url=http://10.77.0.10:2379
disc=(--discovery etcd --etcd-endpoints "$etcd_url" --discovery-ttl-s 5)

pids=()
stop_all() {
  for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}
cleanup() {
  stop_all
  benchmarks/scripts/netns.sh down
}
trap cleanup EXIT
benchmarks/scripts/netns.sh up
on() { local host=$1; shift; ip netns exec "tdm-$host" "$@"; }
# In the background, with $! the process itself (a backgrounded function would be a subshell,
# and killing it would leave the JVM running).
on_bg() { local host=$1; shift; ( exec ip netns exec "tdm-$host" "$@" ) & }

rm -rf "$out/etcd"
on_bg front etcd --data-dir "$out/etcd" --listen-client-urls "$etcd_url" --advertise-client-urls "$etcd_url" \
  --listen-peer-urls http://10.77.0.10:2380 --initial-advertise-peer-urls http://10.77.0.10:2380 \
  --initial-cluster default=http://10.77.0.10:2380 >"$out/etcd.log" 2>&1
etcd_pid=$!

worker() { # role host-last-octet cpu backend
  local role=$1 ip=10.77.0.$2 cpu=$3 kv=$4
  # UCX between network namespaces: its tcp transport, as between hosts without RDMA (its shared
  # memory transports would see one machine and bypass the shaped link).
  on_bg "$role" env UCX_NET_DEVICES=eth0 UCX_TLS=tcp,self taskset -c "$cpu" "${java[@]}" -cp "$cp" dev.tandem.cli.Main worker \
    --role "$role" --host "$ip" --port 9000 --metrics-port 9100 --worker-id "$role-0" --model "$model" \
    --kv-cache-memory 1g --max-context-length 8192 --no-chunked-prefill --max-batched-tokens 8192 \
    --kv-transfer "$kv" --kv-transfer-timeout-ms 300000 "${disc[@]}" >"$out/$kv-$role.log" 2>&1
  pids+=($!)
}

salt=100 # a new long prompt in every case: none is in a cache already
for kv in $backends; do
  benchmarks/scripts/netns.sh shape none
  worker prefill 11 0 "$kv"
  worker decode 12 1 "$kv"
  for role in prefill decode; do
    for _ in $(seq 1 300); do grep -q "registered in etcd" "$out/$kv-$role.log" && break; sleep 1; done
  done
  worker_pids=("${pids[@]}")
  for rate in $rates; do
    benchmarks/scripts/netns.sh shape "$rate"
    for mode in $modes; do
      case="$kv-$rate-$mode"
      salt=$((salt + 1))
      on_bg front "${java[@]}" -cp "$cp" dev.tandem.cli.Main frontend --host 10.77.0.10 --port 8000 --disagg "$mode" \
        "${disc[@]}" >"$out/$case-frontend.log" 2>&1
      fe=$!
      # With auto the router probes every backend both workers run, then logs which one pulls go over.
      measured="KV link"; [ "$kv" = auto ] && measured="pulls go over"
      for _ in $(seq 1 180); do grep -q "$measured" "$out/$case-frontend.log" 2>/dev/null && break; sleep 1; done
      sleep 2
      echo "backend=$kv rate=$rate mode=$mode $(grep -ho "KV link .*" "$out/$case-frontend.log" | paste -sd ';' - || echo "KV link not measured")" \
        | tee -a "$out/results.txt"
      on front "${java[@]}" -cp "$cp" dev.tandem.bench.Interference http://10.77.0.10:8000 "$shape" "$streams" "$long" 5 1 "$salt" \
        2>>"$out/$case-bench.err" | sed "s/^/backend=$kv rate=$rate mode=$mode /" | tee -a "$out/results.txt" \
        || echo "backend=$kv rate=$rate mode=$mode failed (see $out/$case-*)" | tee -a "$out/results.txt"
      kill "$fe" 2>/dev/null || true
      wait "$fe" 2>/dev/null || true
      sleep 1
    done
  done
  for p in "${worker_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait "${worker_pids[@]}" 2>/dev/null || true
  pids=()
  sleep 6 # their leases
done
kill "$etcd_pid" 2>/dev/null || true
echo "results: $out/results.txt"
