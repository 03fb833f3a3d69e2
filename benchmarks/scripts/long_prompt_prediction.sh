#!/usr/bin/env bash
# How well a fresh worker's warm-up predicts long prompts (docs/benchmarks.md, "The warm-up's
# prefill figure"): ROUNDS times, a fresh worker process on MODEL behind a frontend; each of LENGTHS
# (prompt tokens, random words, nothing cached) is sent once, in order, and the router's predicted
# time to first token (`routing.predicted_ttft_ms`, from the figure the worker reported) is set
# beside the worker's measured one (`worker_ttft_ms`). The first prompt is the one the warm-up alone
# predicts; later ones follow a fit that has seen served prompts too.
#   benchmarks/scripts/long_prompt_prediction.sh [out-dir]   (ROUNDS=3 LENGTHS="3500 2000 1000" PAUSE_S=0 MODEL=<cache>/llama-100m)
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-long-prompt-prediction}"
cache="${TANDEM_CACHE:-$HOME/.cache/tandem}/bench-models"
model="${MODEL:-$cache/llama-100m}"
mkdir -p "$out"
./tandem --version >/dev/null  # builds if stale
[ -f "$model/config.json" ] || ./tandem model create --shape llama-100m --seed 1 --dtype bf16 --out "$model" >/dev/null
name=$(basename "$model")
cleanup() { pkill -f 'worker-id long-prompt' || true; pkill -f 'port 8101' || true; }
trap cleanup EXIT
echo "round | prompt tokens | predicted TTFT (ms) | worker TTFT (ms) | predicted / measured" | tee "$out/summary.txt"
for round in $(seq 1 "${ROUNDS:-3}"); do
  ./tandem worker --port 9301 --worker-id long-prompt --model "$model" --max-context-length 8192 > "$out/worker-$round.log" 2>&1 &
  ./tandem frontend --port 8101 --worker 127.0.0.1:9301 > "$out/frontend-$round.log" 2>&1 &
  for _ in $(seq 1 300); do curl -s localhost:8101/health | grep -q healthy && break; sleep 1; done
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
