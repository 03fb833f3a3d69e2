#!/usr/bin/env bash
# KV-aware routing experiments (issue 4), each policy side by side in one run, mocker engine at its
# real-time timing model:
#   1. repeated prefixes: 2 workers, 12 prefixes of 1,500 tokens, each used 7 times (shuffled);
#      per-worker KV capacity (800 blocks of 16) holds about 6 of them, not 12
#   2. shared system prompt: 4 workers, every request starts with the same 1,000-token prefix
#   3. missing events: the repeated-prefix workload with one worker publishing no KV events,
#      frontend and workers as separate processes
#
#   benchmarks/scripts/kv_routing.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-target/bench/kv-routing}"
mkdir -p "$out"
port="${PORT:-8124}"
url="http://127.0.0.1:$port"
pids=()
stop_all() { for p in "${pids[@]:-}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; pids=(); }
trap stop_all EXIT
wait_health() {
  for _ in $(seq 240); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$url/health" || true)
    [ "$code" = 200 ] && return 0
    sleep 0.5
  done
  echo "server did not become healthy" >&2; return 1
}

sections="${SECTIONS:-repeated system missing}"
repeated="--prefixes 12 --prefix-repeats 7 --prefix-tokens 1500 --input-tokens 1600 --output-tokens 8 --seed 11"
if [[ " $sections " == *" repeated "* ]]; then
for conc in 1 2; do
for mode in kv round-robin random; do
  echo "== repeated prefixes, concurrency $conc, router $mode"
  ./tandem serve --engine mocker --host 127.0.0.1 --port "$port" --workers 2 --kv-blocks 800 --router-mode "$mode" >"$out/serve-$mode.log" 2>&1 &
  pids+=($!); wait_health
  ./tandem bench --url "$url" $repeated --concurrency "$conc" --json "$out/repeated-c$conc-$mode.json" | tee "$out/repeated-c$conc-$mode.txt"
  stop_all
done
done
fi

if [[ " $sections " == *" system "* ]]; then
system="--prefixes 1 --prefix-repeats 240 --prefix-tokens 1000 --input-tokens 1100 --output-tokens 32 --concurrency 16 --seed 12"
for mode in kv round-robin; do
  echo "== shared system prompt, 4 workers, router $mode"
  ./tandem serve --engine mocker --host 127.0.0.1 --port "$port" --workers 4 --router-mode "$mode" >"$out/serve-system-$mode.log" 2>&1 &
  pids+=($!); wait_health
  ./tandem bench --url "$url" $system --json "$out/system-$mode.json" | tee "$out/system-$mode.txt"
  stop_all
done
fi

if [[ " $sections " == *" missing "* ]]; then
echo "== missing events: worker w1 publishes none (separate processes, window 5 s)"
./tandem worker --engine mocker --port 9101 --worker-id w0 --kv-blocks 800 >"$out/w0.log" 2>&1 & pids+=($!)
./tandem worker --engine mocker --port 9102 --worker-id w1 --kv-blocks 800 --no-kv-events >"$out/w1.log" 2>&1 & pids+=($!)
sleep 3
./tandem frontend --host 127.0.0.1 --port "$port" --worker 127.0.0.1:9101,127.0.0.1:9102 --missing-events-window-s 5 >"$out/frontend.log" 2>&1 &
pids+=($!); wait_health
start=$(date +%s%N)
( while ! curl -s "$url/health" | grep -q '"degraded"'; do sleep 0.2; done
  echo "detected $(( ($(date +%s%N) - start) / 1000000 )) ms after the workload started: $(curl -s "$url/health")" >"$out/missing-detected.txt" ) &
watcher=$!
./tandem bench --url "$url" $repeated --concurrency 1 --json "$out/missing-events.json" | tee "$out/missing-events.txt"
sleep 1; kill $watcher 2>/dev/null || true
cat "$out/missing-detected.txt" 2>/dev/null || echo "not detected"
grep -h "published no KV events" "$out/frontend.log" | head -1 || true
stop_all
fi
