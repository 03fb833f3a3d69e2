#!/usr/bin/env bash
# The built-in CPU engine against the machine's limits, llama.cpp and Jlama, on generated Llama
# models of ~100M and ~0.6B parameters in bf16. Engines run one after another in separate JVMs,
# twice round (ours, llama.cpp, Jlama, ours, llama.cpp, Jlama) so that drift on a shared machine
# shows up instead of favouring one engine.
#   benchmarks/scripts/cpu_engine.sh [out-dir]      (MODELS="llama-100m llama-0.6b" THREADS=2)
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-cpu-engine}"
models="${MODELS:-llama-100m llama-0.6b}"
threads="${THREADS:-$(nproc)}"
batches="${BATCHES:-1,8,32}"
llama_batches="${LLAMA_BATCHES:-$batches}"   # llama.cpp's prefill is slow here; batch 32 takes minutes on 0.6B
rounds="${ROUNDS:-2}"
prompts="${PROMPTS:-512,2048}"
cache="${TANDEM_CACHE:-$HOME/.cache/tandem}/bench-models"
mkdir -p "$out" "$cache"
./tandem --version >/dev/null  # builds if stale
./mvnw -q -pl engine-comparison -am -DskipTests package >/dev/null
java=("$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xmx12g)
tandem_cp="cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*"
compare_cp="engine-comparison/target/tandem-engine-comparison-0.1.0-SNAPSHOT.jar:engine-comparison/target/lib/*"

for m in $models; do
  dir="$cache/$m"
  [ -f "$dir/config.json" ] || ./tandem model create --shape "$m" --seed 1 --dtype bf16 --out "$dir" >/dev/null
  [ -f "$dir.gguf" ] || ./tandem model export-gguf --model "$dir" --out "$dir.gguf" >/dev/null
  for round in $(seq 1 "$rounds"); do
    "${java[@]}" -cp "$tandem_cp" dev.tandem.bench.EngineThroughput "$dir" "$threads" "$batches" "$prompts" 2>/dev/null \
      | tee "$out/$m-tandem-$round.txt"
    "${java[@]}" -cp "$compare_cp" dev.tandem.comparison.LlamaCppThroughput "$dir.gguf" "$threads" "$llama_batches" "$prompts" 2>/dev/null \
      | tee "$out/$m-llamacpp-$round.txt"
    "${java[@]}" --enable-preview -cp "$compare_cp" dev.tandem.comparison.JlamaThroughput "$dir" "$prompts" 2>/dev/null \
      | grep -v SLF4J | tee "$out/$m-jlama-$round.txt"
  done
done
