#!/usr/bin/env bash
# What serving LoRA adapters costs the built-in engine: prefill of PROMPT tokens and batch-1 decode
# of TOKENS tokens on the base model and on adapters of each rank in RANKS (every projection, f32),
# and a batch of four on the base model, on one adapter, and on four adapters; each rate ÷ the base
# model's beside its limit (prefill: FLOPs; decode: bytes read a step). ROUNDS rounds rotating the
# order; a PNG chart beside the text. Adapters are generated (tandem model create-lora) under OUT.
#   benchmarks/scripts/lora_overhead.sh [out-dir]     (MODEL=llama-0.6b ROUNDS=3 THREADS=$(nproc) TOKENS=64 PROMPT=512 RANKS=8,16,64)
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-lora-overhead}"
model="${MODEL:-llama-0.6b}"
mkdir -p "$out"
source benchmarks/scripts/bench_model.sh
dir=$(bench_model "$model")
exec "$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xmx8g \
  -cp "cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*" dev.tandem.bench.LoraOverhead \
  "$dir" "$out" "${THREADS:-$(nproc)}" "${TOKENS:-64}" "${PROMPT:-512}" "${ROUNDS:-3}" "${RANKS:-8,16,64}"
