#!/usr/bin/env bash
# Batch-1 decode of the built-in engine and llama.cpp on one generated bf16 model, ROUNDS rounds
# with the order alternating, each engine in its own JVM with the bandwidth limit probed right
# before and after it; prints every round, the median and spread, and where Tandem's time goes.
#   benchmarks/scripts/decode_batch1.sh [out-dir]     (MODEL=llama-0.6b ROUNDS=3 THREADS=$(nproc) STEPS=64 CONTEXT=128 QUANT=none)
# CONTEXT is the prompt decode follows (the depth attention reads): 8192 compares long-context decode.
# QUANT=q8_0 or q4_0 runs Tandem with --quantization QUANT and llama.cpp on a GGUF of the same quantized weights.
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-decode-batch1}"
model="${MODEL:-llama-0.6b}"
mkdir -p "$out"
source benchmarks/scripts/bench_model.sh
./mvnw -q -pl engine-comparison -am -DskipTests -Djazzer.skip package >/dev/null
dir=$(bench_model "$model")
quant="${QUANT:-none}"
gguf="$dir.gguf"
[ "$quant" = none ] || gguf="$dir.$quant.gguf"
[ -f "$gguf" ] || ./tandem model export-gguf --model "$dir" --out "$gguf" --quantization "$quant" >/dev/null
exec "$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xmx4g -Dquantization="$quant" \
  -cp "cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*" dev.tandem.bench.BatchOneDecode \
  "$dir" "$gguf" "engine-comparison/target/tandem-engine-comparison-0.1.0-SNAPSHOT.jar:engine-comparison/target/lib/*" \
  "$out" "${ROUNDS:-3}" "${THREADS:-$(nproc)}" "${STEPS:-64}" "${CONTEXT:-128}"
