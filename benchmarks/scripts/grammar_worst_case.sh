#!/usr/bin/env bash
# The worst a client's structured output costs: the matcher's time per byte and the token mask's
# time for nested repetitions (ambiguous between levels or not), beside an ordinary regex.
#   benchmarks/scripts/grammar_worst_case.sh [out-dir]      (SECONDS_PER_CASE=60)
# Against another build: BUILD_CLASSES=<that build's engine-adapters/target/classes> puts its
# grammar classes first on the class path.
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-grammar-worst}"
mkdir -p "$out"
[ -f cli/target/tandem-cli-0.1.0-SNAPSHOT.jar ] || ./mvnw -q install -DskipTests -Djazzer.skip
"$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xmx4g \
  -cp "${BUILD_CLASSES:+$BUILD_CLASSES:}cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*" \
  dev.tandem.bench.GrammarWorstCaseBench "${SECONDS_PER_CASE:-60}" 2>/dev/null | tee "$out/grammar-worst-case.txt"
