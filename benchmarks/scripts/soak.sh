#!/usr/bin/env bash
# Soak (docs/reliability.md, "Soak"): WORKERS mocker worker processes behind one frontend process,
# CONCURRENCY streaming completions kept in flight for DURATION seconds by `tandem bench
# --duration-s`. Every SAMPLE seconds it records each process's RSS and open file descriptors, the
# router's open reservations and each worker's KV blocks in use; after the load, it waits IDLE
# seconds and samples once more (what must be back to its start: blocks 0, reservations 0, fds).
#   benchmarks/scripts/soak.sh [out-dir]
#   (WORKERS=3 CONCURRENCY=1000 DURATION=600 SAMPLE=10 IDLE=20 INPUT=128 OUTPUT=64)
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-soak}"
workers="${WORKERS:-3}"
concurrency="${CONCURRENCY:-1000}"
duration="${DURATION:-600}"
sample="${SAMPLE:-10}"
idle="${IDLE:-20}"
mkdir -p "$out"
./tandem --version >/dev/null  # builds if stale
java=("$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow)
cp="$PWD/cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:$PWD/cli/target/lib/*"

pids=()
cleanup() { for p in "${pids[@]:-}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
addresses=()
for i in $(seq 0 $((workers - 1))); do
  "${java[@]}" -cp "$cp" dev.tandem.cli.Main worker --engine mocker --port $((9700 + i)) --metrics-port $((9800 + i)) \
    --worker-id "mocker-$i" >"$out/worker-$i.log" 2>&1 &
  pids+=($!)
  addresses+=("127.0.0.1:$((9700 + i))")
done
"${java[@]}" -cp "$cp" dev.tandem.cli.Main frontend --port 8700 --worker "$(IFS=,; echo "${addresses[*]}")" >"$out/frontend.log" 2>&1 &
pids+=($!)
names=(); for i in $(seq 0 $((workers - 1))); do names+=("worker-$i"); done; names+=(frontend)
for _ in $(seq 1 120); do curl -sf localhost:8700/health >/dev/null && break; sleep 1; done

metric() { # url name → the sum of that metric's samples
  curl -s "$1" | awk -v n="$2" '$1 ~ "^"n"({|$)" {s += $2} END {printf "%.0f", s}'
}
snapshot() { # phase
  local t line
  t=$(date +%s)
  line="$t,$1"
  for p in "${pids[@]}"; do
    line="$line,$(awk '/VmRSS/ {print $2}' /proc/$p/status),$(ls /proc/$p/fd | wc -l)"
  done
  local blocks=0
  for i in $(seq 0 $((workers - 1))); do
    blocks=$((blocks + $(metric "http://127.0.0.1:$((9800 + i))/metrics" tandem_worker_engine_kv_blocks_used)))
  done
  line="$line,$blocks,$(metric http://127.0.0.1:8700/metrics tandem_router_open_reservations)"
  echo "$line" >>"$out/samples.csv"
}
header="time_s,phase"; for n in "${names[@]}"; do header="$header,${n}_rss_kb,${n}_fds"; done
echo "$header,kv_blocks_used,open_reservations" >"$out/samples.csv"
snapshot start
"${java[@]}" -cp "$cp" dev.tandem.cli.Main bench --url http://127.0.0.1:8700 --concurrency "$concurrency" --duration-s "$duration" \
  --input-tokens "${INPUT:-128}" --output-tokens "${OUTPUT:-64}" --num-requests 5000 --timeout-s 120 --json "$out/bench.json" \
  >"$out/bench.txt" 2>"$out/bench.err" &
bench=$!
while kill -0 "$bench" 2>/dev/null; do sleep "$sample"; kill -0 "$bench" 2>/dev/null && snapshot load; done
wait "$bench" || true
sleep "$idle"
snapshot idle
cat "$out/bench.txt"
"${java[@]}" -cp "$cp" dev.tandem.bench.SoakChart "$out/samples.csv" "$out/soak.png"
echo "samples: $out/samples.csv, chart: $out/soak.png"
