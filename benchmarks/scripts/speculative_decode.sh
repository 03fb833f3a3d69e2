#!/usr/bin/env bash
# N-gram speculative decoding at batch 1 on one generated model: the cost of a pass that verifies
# k proposed tokens (k = 0..8, against the plain one-token step), then the same greedy request
# without speculation and with k = 2, 4, 8 in ROUNDS rounds rotating the order: decode tokens/s,
# proposals drafted and kept, tokens per step, identical tokens; a PNG chart beside the text.
#   benchmarks/scripts/speculative_decode.sh [out-dir]     (MODEL=llama-0.6b ROUNDS=3 THREADS=$(nproc) TOKENS=128 CONTEXT=128 QUANT=none BATCH=1)
# BATCH=N decodes N sequences together in the end-to-end runs (tokens/s summed over them).
# CONSTRAINT=array or words constrains the timed outputs (a JSON array of at least TOKENS/3 integers; as many words and a full stop).
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-speculative-decode}"
model="${MODEL:-llama-0.6b}"
mkdir -p "$out"
source benchmarks/scripts/bench_model.sh
dir=$(bench_model "$model")
exec "$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xmx8g -Dquantization="${QUANT:-none}" -Dbatch="${BATCH:-1}" -Dconstraint="${CONSTRAINT:-}" \
  -cp "cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*" dev.tandem.bench.SpeculativeDecode \
  "$dir" "$out" "${THREADS:-$(nproc)}" "${TOKENS:-128}" "${CONTEXT:-128}" "${ROUNDS:-3}"
