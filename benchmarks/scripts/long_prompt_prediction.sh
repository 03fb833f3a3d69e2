#!/usr/bin/env bash
# How well a fresh worker's warm-up predicts long prompts (docs/benchmarks.md, "The warm-up's
# prefill figure"): ROUNDS times, a fresh worker process on MODEL behind a frontend; each of LENGTHS
# (prompt tokens, random words, nothing cached) is sent once, in order, and the router's predicted
# time to first token (`routing.predicted_ttft_ms`, from the figure the worker reported) is set
# beside the worker's measured one (`worker_ttft_ms`). The first prompt is the one the warm-up alone
# predicts; later ones follow a fit that has seen served prompts too.
#   benchmarks/scripts/long_prompt_prediction.sh [out-dir]   (ROUNDS=3 LENGTHS="3500 2000 1000" PAUSE_S=0 MODEL=<cache>/llama-100m)
set -euo pipefail
. "$(dirname "$0")/fresh_worker.sh"
fresh_worker_setup "${1:-/tmp/tandem-long-prompt-prediction}"
cleanup() { fresh_worker_stop long-prompt 8101; }
trap cleanup EXIT
echo "round | prompt tokens | predicted TTFT (ms) | worker TTFT (ms) | predicted / measured" | tee "$out/summary.txt"
for round in $(seq 1 "${ROUNDS:-3}"); do
  fresh_worker_start "$round" long-prompt 9301 8101 --max-context-length 8192
  for length in ${LENGTHS:-3500 2000 1000}; do
    sleep "${PAUSE_S:-0}"  # a pause lets the worker's load report catch up with the request before
    # Token ids, so that the prompt is exactly that long.
    python3 -c "import random, json; random.seed($round * 1000 + $length); print(json.dumps({'model': '$name', 'max_tokens': 1,
      'prompt': [random.randrange(1000, 100000) for _ in range($length)], 'tandem': {'timing': True}}))" \
      | curl -s localhost:8101/v1/completions -d @- > "$out/response-$round-$length.json"
    python3 -c "import json; t = json.load(open('$out/response-$round-$length.json'))['tandem']
p, m = t['routing']['predicted_ttft_ms'], t['worker_ttft_ms']
print('$round | $length | %.0f | %.0f | %.2f' % (p, m, p / m))" | tee -a "$out/summary.txt"
  done
  grep -o 'warmed up in .*' "$out/worker-$round.log" | head -1 | tee -a "$out/summary.txt"
  cleanup
  sleep 2
done
