#!/usr/bin/env bash
# The runs behind docs/benchmarks.md's "Weights quantized to Q4_0" section (2 vCPUs, 24 GB).
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=docs/results/q4_0-2026-12-06
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
java="$JAVA_HOME/bin/java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xmx4g"
cp="cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*"
# Greedy text against llama.cpp on the same Q4_0 weights.
for c in gemma3 phi3 gemma2; do
  CONFIG=benchmarks/configs/$c-crosscheck.json QUANT=q4_0 benchmarks/scripts/greedy_vs_llamacpp.sh "/tmp/gq4-$c" 2>/dev/null | grep -A2 "MATCH\|DIFF" || true
done > "$out/greedy-vs-llamacpp-q4_0.txt"
# Tandem alone: bf16 as stored, Q8_0 and Q4_0, alternating.
for m in llama-0.6b phi3-mini; do
  for i in 1 2; do
    for q in none q8_0 q4_0; do
      echo "== $m quantization=$q run $i"
      $java -Dquantization=$q -cp "$cp" dev.tandem.bench.BatchOneDecode --tandem ~/.cache/tandem/bench-models/$m 2 32 128 2>&1 | grep -E "^rate|^bytes|breakdown matmul"
    done
  done
done > "$out/bf16-q8_0-q4_0.txt"
# Tandem and llama.cpp on the same Q4_0 weights, rounds alternating.
for m in llama-0.6b phi3-mini gemma2-2b; do
  MODEL=$m ROUNDS=3 QUANT=q4_0 benchmarks/scripts/decode_batch1.sh "/tmp/q4-$m" > /dev/null 2>&1
  cp "/tmp/q4-$m/summary.txt" "$out/decode-batch1-$m-q4_0.txt"
  cp "/tmp/q4-$m/batch1-decode.png" "$out/decode-batch1-$m-q4_0.png"
done
# Prefill: rows are dequantized into the same f32 panels.
for i in 1 2; do
  for q in q8_0 q4_0; do
    echo "== llama-0.6b 512-token prefill, quantization=$q run $i"
    $java -Dquantization=$q -cp "$cp" dev.tandem.bench.PrefillBreakdown ~/.cache/tandem/bench-models/llama-0.6b 512 2 2>&1 | grep -E "prefill of|matmul, all"
  done
done > "$out/prefill-q8_0-vs-q4_0.txt"
# After the one-job-per-kernel fix (the decode-batch1 files of gemma2-2b and phi3-mini above were
# kept as *-before-one-job*; llama-0.6b's three rounds were all healthy and are the ones above):
for m in gemma2-2b phi3-mini; do
  for i in 1 2; do
    for q in q8_0 q4_0; do
      echo "== $m quantization=$q run $i"
      $java -Dquantization=$q -cp "$cp" dev.tandem.bench.BatchOneDecode --tandem ~/.cache/tandem/bench-models/$m 2 32 128 2>&1 | grep -E "^rate|^bytes|breakdown matmul"
    done
  done
done > "$out/q8_0-vs-q4_0.txt"
for m in phi3-mini gemma2-2b; do
  MODEL=$m ROUNDS=3 QUANT=q4_0 benchmarks/scripts/decode_batch1.sh "/tmp/q4b-$m" > /dev/null 2>&1
  cp "/tmp/q4b-$m/summary.txt" "$out/decode-batch1-$m-q4_0.txt"
  cp "/tmp/q4b-$m/batch1-decode.png" "$out/decode-batch1-$m-q4_0.png"
done
# Memory and start-up: memory-and-start.txt (tandem serve as written there, RSS from /proc after one request).
