#!/usr/bin/env bash
# What sampling costs the built-in engine's decode: tokens/s with greedy argmax beside temperature
# sampling, top-p 0.9 and Qwen3's generation defaults (T 0.6, top-k 20, top-p 0.95) at the Qwen3
# vocabulary (152k ids), rounds interleaved, each as a ratio to greedy in the same round; a PNG chart.
#   benchmarks/scripts/sampling_cost.sh [out-dir]      (MODEL=llama-100m THREADS=2 BATCH=8 ROUNDS=5)
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-sampling}"
shape="${MODEL:-llama-100m}"
threads="${THREADS:-$(nproc)}"
batch="${BATCH:-8}"
rounds="${ROUNDS:-5}"
mkdir -p "$out"
source benchmarks/scripts/bench_model.sh
dir=$(bench_model "$shape")
"$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xmx8g \
  -cp "cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*" dev.tandem.bench.SamplingCost "$dir" "$out" "$threads" "$batch" "$rounds" 2>/dev/null \
  | tee "$out/sampling-cost.txt"
