#!/usr/bin/env bash
# The runs behind docs/benchmarks.md's "Weights quantized to Q8_0" section (2 vCPUs, 24 GB).
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=docs/results/q8_0-2026-12-06
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
java="$JAVA_HOME/bin/java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xmx4g"
cp="cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*"
# Tandem and llama.cpp on the same Q8_0 weights, rounds alternating.
for m in llama-0.6b gemma2-2b phi3-mini; do
  MODEL=$m ROUNDS=3 QUANT=q8_0 benchmarks/scripts/decode_batch1.sh "/tmp/q8-$m" > /dev/null 2>&1
  cp "/tmp/q8-$m/summary.txt" "$out/decode-batch1-$m-q8_0.txt"
  cp "/tmp/q8-$m/batch1-decode.png" "$out/decode-batch1-$m-q8_0.png"
done
# Tandem alone: bf16 as stored against Q8_0, alternating.
for m in gemma2-2b phi3-mini; do
  for i in 1 2; do
    for q in none q8_0; do
      echo "== $m quantization=$q run $i"
      $java -Dquantization=$q -cp "$cp" dev.tandem.bench.BatchOneDecode --tandem ~/.cache/tandem/bench-models/$m 2 32 128 2>&1 | grep -E "^rate|^bytes|breakdown matmul"
    done
  done
done > "$out/bf16-vs-q8_0.txt"
# Prefill: the widening into panels costs what it costs for bf16.
for i in 1 2; do
  for q in none q8_0; do
    echo "== llama-0.6b 512-token prefill, quantization=$q run $i"
    $java -Dquantization=$q -cp "$cp" dev.tandem.bench.PrefillBreakdown ~/.cache/tandem/bench-models/llama-0.6b 512 2 2>&1 | grep -E "prefill of|matmul, all"
  done
done > "$out/prefill-bf16-vs-q8_0.txt"
# Greedy text against llama.cpp on the same Q8_0 weights.
for c in gemma3 phi3 gemma2; do
  CONFIG=benchmarks/configs/$c-crosscheck.json QUANT=q8_0 benchmarks/scripts/greedy_vs_llamacpp.sh "/tmp/gq8-$c" 2>/dev/null | grep -A2 "MATCH\|DIFF" || true
done > "$out/greedy-vs-llamacpp-q8_0.txt"
