#!/usr/bin/env bash
# Disaggregation experiments on CPU (docs/benchmarks.md, "Disaggregated serving"): steady decoding
# streams, then a long prompt arrives; normal and maximum inter-token latency of the streams, and
# the long request's time to first token, for
#   agg          one aggregated worker on every CPU, whole-prompt prefill (no chunking)
#   agg-chunked  the same with chunked prefill (512-token steps)
#   disagg       a prefill worker on CPU 0 and a decode worker on CPU 1 (separate processes), --disagg auto
#   disagg-isolated   the same with the frontend and load generator pinned to CPU 0 too, the
#                     prefill worker niced (PREFILL_NICE, 19)
#   shared-always / shared-auto   both roles on CPU 0: splitting forced, and left to the policy
#   slow-always / slow-auto       separate CPUs but the loopback link throttled to SLOW_RATE with tc
#                                 (needs root), SLOW_STREAMS (0) streams: nothing to protect
# Each worker, the frontend and the load generator are separate JVMs.
# ARRIVALS (2) long prompts arrive one after another, each reported on its own line.
#   benchmarks/scripts/disagg_interference.sh [out-dir]   (MODEL=llama-100m STREAMS=4 LONG=3500 ARRIVALS=2 KV_TRANSFER=auto CASES="...")
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-disagg}"
shape="${MODEL:-llama-100m}"
streams="${STREAMS:-4}"
long="${LONG:-3500}"
arrivals="${ARRIVALS:-2}"
kv="${KV_TRANSFER:-auto}"  # the disagg cases' backend
cases="${CASES:-agg agg-chunked disagg disagg-isolated shared-always shared-auto slow-always slow-auto}"
slow_rate="${SLOW_RATE:-16mbit}"
slow_streams="${SLOW_STREAMS:-0}"
cache="${TANDEM_CACHE:-$HOME/.cache/tandem}/bench-models"
mkdir -p "$out" "$cache"
./tandem --version >/dev/null  # builds if stale
model="$cache/$shape"
[ -f "$model/config.json" ] || ./tandem model create --shape "$shape" --seed 1 --dtype bf16 --out "$model" >/dev/null
java=("$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow)
cp="cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*"
# Workers and frontend run the jar directly, not ./tandem: the launcher would rebuild mid-run if a
# source changed.
pids=()
cleanup() {
  for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
  tc qdisc del dev lo root 2>/dev/null || true
}
trap cleanup EXIT

worker() { # name cpus args...
  local name=$1 cpus=$2 niceness=0; shift 2
  [ "$name" = prefill ] && niceness="$prefill_nice"
  # shellcheck disable=SC2086 # WORKER_JAVA_OPTS: extra JVM flags, e.g. a flight recording
  nice -n "$niceness" taskset -c "$cpus" "${java[@]}" -Xlog:gc:file="$out/$case-$name-gc.log" ${WORKER_JAVA_OPTS:-} -cp "$cp" dev.tandem.cli.Main worker --model "$model" --kv-cache-memory 1g --max-context-length 8192 \
    --kv-transfer-timeout-ms 180000 "$@" >"$out/$case-$name.log" 2>&1 &
  pids+=($!)
}
frontend() { # workers args...
  local workers=$1; shift
  # Workers warm their engine up before they listen; on a shared CPU that takes a while.
  for role in agg prefill decode; do
    [ -f "$out/$case-$role.log" ] || continue
    for _ in $(seq 1 300); do grep -q "listening on" "$out/$case-$role.log" && break; sleep 1; done
  done
  taskset -c "$aux_cpus" "${java[@]}" -cp "$cp" dev.tandem.cli.Main frontend --host 127.0.0.1 --port 8101 --worker "$workers" "$@" >"$out/$case-frontend.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 120); do
    curl -sf localhost:8101/health >/dev/null 2>&1 && grep -q "serving" "$out/$case-frontend.log" && break
    sleep 1
  done
  for _ in $(seq 1 60); do  # the link probe of a split deployment
    case "$workers" in *,*) grep -q "KV link" "$out/$case-frontend.log" && break ;; *) break ;; esac
    sleep 1
  done
  sleep 2 # the first load reports
}
measure() { # streams
  taskset -c "$aux_cpus" "${java[@]}" -cp "$cp" dev.tandem.bench.Interference http://127.0.0.1:8101 "$shape" "$1" "$long" 5 "$arrivals" 2>>"$out/$case-bench.err" \
    | sed "s/^/case=$case /" | tee -a "$out/results.txt"
}

for case in $cases; do
  aux_cpus="${AUX_CPUS:-0-$(( $(nproc) - 1 ))}"  # frontend and load generator
  prefill_nice=0
  case "$case" in
    agg)
      worker agg 0,1 --port 9101 --role agg --no-kv-transfer --no-chunked-prefill --max-batched-tokens 8192
      frontend 127.0.0.1:9101 ;;
    agg-chunked)
      worker agg 0,1 --port 9101 --role agg --no-kv-transfer --max-batched-tokens 512
      frontend 127.0.0.1:9101 ;;
    disagg|disagg-isolated)
      # disagg-isolated: the frontend and load generator share the prefill worker's CPU, so the
      # decode worker has its CPU to itself.
      # The prefill worker runs at a lower priority (nice 19) there, so that the frontend's and
      # the client's threads, which forward every token, are not queued behind prefill compute.
      [ "$case" = disagg-isolated ] && aux_cpus=0 && prefill_nice="${PREFILL_NICE:-19}"
      worker prefill 0 --port 9101 --role prefill --no-chunked-prefill --max-batched-tokens 8192 --kv-transfer "$kv"
      worker decode 1 --port 9102 --role decode --no-chunked-prefill --max-batched-tokens 8192 --kv-transfer "$kv"
      frontend 127.0.0.1:9101,127.0.0.1:9102 --disagg auto ;;
    shared-always|shared-auto)
      worker prefill 0 --port 9101 --role prefill --no-chunked-prefill --max-batched-tokens 8192
      worker decode 0 --port 9102 --role decode --no-chunked-prefill --max-batched-tokens 8192
      frontend 127.0.0.1:9101,127.0.0.1:9102 --disagg "${case#shared-}" ;;
    slow-always|slow-auto)
      tc qdisc add dev lo root tbf rate "$slow_rate" burst 256kb latency 100ms
      # tc throttles loopback, which shared memory does not cross: tcp here.
      worker prefill 0 --port 9101 --role prefill --no-chunked-prefill --max-batched-tokens 8192 --kv-transfer tcp
      worker decode 1 --port 9102 --role decode --no-chunked-prefill --max-batched-tokens 8192 --kv-transfer tcp
      frontend 127.0.0.1:9101,127.0.0.1:9102 --disagg "${case#slow-}" ;;
    *) echo "unknown case $case" >&2; exit 2 ;;
  esac
  case "$case" in slow-*) n="$slow_streams" ;; *) n="$streams" ;; esac
  measure "$n" || echo "case=$case failed (see $out/$case-*.log)" | tee -a "$out/results.txt"
  grep -h "KV link" "$out/$case-frontend.log" | sed "s/^/case=$case /" | tee -a "$out/results.txt" || true
  cleanup
  sleep 2
done
