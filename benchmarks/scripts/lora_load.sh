#!/usr/bin/env bash
# What loading a LoRA adapter while serving costs the streams decoding beside it: STREAMS greedy
# sequences decode without pause while an adapter of each rank in RANKS (every projection, f32) is
# loaded, read beside the engine (Tandem's way) and, alternating, read on the engine thread between
# two steps; each load's wall time and the longest gap between tokens that overlaps it, beside the
# streams' median gap before it and beside the bound for reading beside: a thread that only
# computes for as long. ROUNDS rounds; a PNG chart beside the text. Adapters are generated (tandem
# model create-lora) beside the model, in the cache.
#   benchmarks/scripts/lora_load.sh [out-dir]     (MODEL=llama-0.6b ROUNDS=3 THREADS=$(nproc) RANKS=8,16,64 STREAMS=1)
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-lora-load}"
model="${MODEL:-llama-0.6b}"
mkdir -p "$out"
source benchmarks/scripts/bench_model.sh
dir=$(bench_model "$model")
exec "$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xmx8g \
  -cp "cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*" dev.tandem.bench.LoraLoadWhileServing \
  "$dir" "$out" "${THREADS:-$(nproc)}" "${ROUNDS:-3}" "${RANKS:-8,16,64}" "${STREAMS:-1}"
