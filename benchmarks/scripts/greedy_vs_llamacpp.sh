#!/usr/bin/env bash
# The built-in engine against llama.cpp, an independent implementation, on the same weights: a
# model written by `tandem model create` from CONFIG (f32 weights) and exported to GGUF; the greedy
# continuation of each prompt below by llama.cpp (dev.tandem.comparison.LlamaCppGreedy) and by
# `tandem serve` over /v1/completions, compared text for text. Prints MATCH or DIFF per prompt;
# exits 1 on any DIFF. Configs: benchmarks/configs/gemma3-crosscheck.json (the default: Gemma 3, 12
# layers, every sixth full, the others sliding over 16 positions, so that the prompts run past the
# window and both RoPE bases matter) and phi3-crosscheck.json (Phi-3's fused projections; no window,
# which llama.cpp does not apply to Phi-3) and phi4-longrope-crosscheck.json (Phi-4-mini's RoPE:
# three quarters of each head rotated, LongRoPE over an original context of 2,048) and
# gemma2-crosscheck.json (Gemma 2: 26 layers, every other one sliding over 16 positions, attention
# scores capped at 1 and logits at 5, so that both caps bend the output). Both engines
# pick LongRoPE's long or short factors by their context: llama.cpp's is CTX, Tandem's
# SERVE_ARGS="--max-context-length N" (else the model's max_position_embeddings). QUANT=q8_0 (or q4_0) quantizes
# the weights: Tandem at load (--quantization q8_0), llama.cpp reading the same Q8_0 blocks from the GGUF
# (its kernels also round the activations to 8 bits, Tandem's keep f32, so a near-tie may go either way).
#   benchmarks/scripts/greedy_vs_llamacpp.sh [out-dir]     (CONFIG=benchmarks/configs/gemma3-crosscheck.json TOKENS=40 PORT=8129 CTX=4096 SERVE_ARGS= QUANT=none)
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-greedy-vs-llamacpp}"
config="${CONFIG:-benchmarks/configs/gemma3-crosscheck.json}"
tokens="${TOKENS:-40}"
port="${PORT:-8129}"
ctx="${CTX:-4096}"
mkdir -p "$out"
./tandem --version >/dev/null  # builds if stale
./mvnw -q -pl engine-comparison -am -DskipTests -Djazzer.skip package >/dev/null
rm -rf "$out/model"
./tandem model create --config "$config" --seed 3 --dtype f32 --out "$out/model" >/dev/null
quant="${QUANT:-none}"
./tandem model export-gguf --model "$out/model" --out "$out/model.gguf" --quantization "$quant" >/dev/null
cat > "$out/prompts.txt" <<'P'
The quick brown fox jumps over the lazy dog. 1 2 3 4
def main(): print(sum(range(10)))
Once upon a time, in a land far away, there lived a king who had three daughters and
P
"$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED \
  -cp "engine-comparison/target/tandem-engine-comparison-0.1.0-SNAPSHOT.jar:engine-comparison/target/lib/*" \
  dev.tandem.comparison.LlamaCppGreedy "$out/model.gguf" "$tokens" "$ctx" < "$out/prompts.txt" 2>"$out/llamacpp.log" \
  | grep -a '^GREEDY ' | sed 's/^GREEDY //' > "$out/llamacpp.txt"
# shellcheck disable=SC2086
./tandem serve --model "$out/model" --port "$port" --quantization "$quant" ${SERVE_ARGS:-} > "$out/tandem.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 1; done
python3 - "$out" "$port" "$tokens" <<'PY'
import json, sys, urllib.request
out, port, tokens = sys.argv[1], sys.argv[2], int(sys.argv[3])
prompts = open(f"{out}/prompts.txt").read().splitlines()
theirs = [json.loads(line) for line in open(f"{out}/llamacpp.txt")]
ok = len(theirs) == len(prompts)
for prompt, ref in zip(prompts, theirs):
    body = {"model": "model", "prompt": prompt, "max_tokens": tokens, "temperature": 0, "ignore_eos": True}
    req = urllib.request.Request(f"http://localhost:{port}/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
    ours = json.load(urllib.request.urlopen(req))["choices"][0]["text"]
    same = ours == ref
    ok &= same
    print(("MATCH" if same else "DIFF "), json.dumps(prompt))
    print("  tandem:   ", json.dumps(ours, ensure_ascii=False))
    if not same:
        print("  llama.cpp:", json.dumps(ref, ensure_ascii=False))
sys.exit(0 if ok else 1)
PY
