#!/usr/bin/env bash
# How well a worker's warm-up measures its prefill speed (docs/benchmarks.md, "The warm-up's prefill
# figure"): ROUNDS times, a fresh worker process (as a deployment starts one) on MODEL behind a
# frontend; the prefill speed at 512 tokens it reports after its warm-up, then after PROMPTS random
# prompts of ~800 tokens (its fit over serving steps), and their ratio. A router weighs remote against
# local prefill by the first figure until a worker has served enough prompts to replace it.
#   benchmarks/scripts/warmup_fit.sh [out-dir]   (ROUNDS=3 PROMPTS=40 MODEL=<cache>/llama-100m)
set -euo pipefail
. "$(dirname "$0")/fresh_worker.sh"
fresh_worker_setup "${1:-/tmp/tandem-warmup-fit}"
speed() { curl -s localhost:9400/metrics | awk '/^tandem_worker_engine_prefill_tokens_per_second/ {print $2}'; }
cleanup() { fresh_worker_stop warmup-fit 8100; }
trap cleanup EXIT
echo "round | warm-up log | after warm-up (tok/s at 512) | after $((${PROMPTS:-40})) prompts | ratio" | tee "$out/summary.txt"
for round in $(seq 1 "${ROUNDS:-3}"); do
  fresh_worker_start "$round" warmup-fit 9300 8100
  warm=$(speed)
  for i in $(seq 1 "${PROMPTS:-40}"); do
    python3 -c "import random, json; random.seed($round * 1000 + $i); print(json.dumps({'model': '$name', 'max_tokens': 2,
      'prompt': ' '.join(random.choice(['hello', 'world', 'tree', 'blue', 'sky', 'run', 'yes']) for _ in range(800))}))" \
      | curl -s localhost:8100/v1/completions -d @- > /dev/null
  done
  served=$(speed)
  log=$(grep -o 'warmed up in .*tokens/s at 512' "$out/worker-$round.log" | head -1)
  printf '%s | %s | %.0f | %.0f | %.2f\n' "$round" "$log" "$warm" "$served" "$(echo "$warm / $served" | bc -l)" | tee -a "$out/summary.txt"
  cleanup
  sleep 2
done
