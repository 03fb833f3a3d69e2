#!/usr/bin/env bash
# The cost of constrained decoding: token-mask time per generated token at the Qwen3 vocabulary
# (JSON schemas, and vLLM's structured_outputs regex, choice and EBNF grammars, a structural tag),
# and decode throughput with vs without a schema (and with a reasoning first, and with tool calls held to
# their tool as under tool_choice auto) at batch 8 on the same model (rounds interleaved).
#   benchmarks/scripts/grammar_mask.sh [out-dir]      (MODEL=llama-100m THREADS=2 ROUNDS=3)
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-grammar}"
shape="${MODEL:-llama-100m}"
threads="${THREADS:-$(nproc)}"
rounds="${ROUNDS:-3}"
mkdir -p "$out"
source benchmarks/scripts/bench_model.sh
dir=$(bench_model "$shape")
"$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xmx8g \
  -cp "cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*" dev.tandem.bench.GrammarMaskBench "$dir" "$out" "$threads" "$rounds" 2>/dev/null \
  | tee "$out/grammar-mask.txt"
