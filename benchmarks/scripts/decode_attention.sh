#!/usr/bin/env bash
# The CPU backend's decode attention alone against the memory bandwidth probed in the same run, at
# several contexts, a sequence's KV blocks in order and shuffled (dev.tandem.bench.DecodeAttention;
# docs/benchmarks.md, "Decode at long contexts"). Prints a table and writes a PNG chart.
#   benchmarks/scripts/decode_attention.sh [out-dir]   (CONTEXTS=512,2048,8192,32768 ROWS=1)
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-decode-attention}"
./tandem --version >/dev/null  # builds if stale
exec "$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xmx4g \
  -cp "cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*" dev.tandem.bench.DecodeAttention \
  "$out" "${CONTEXTS:-512,2048,8192,32768}" "${ROWS:-1}" 2>&1 | grep -v -e '^WARNING'
