#!/usr/bin/env bash
# Sliding-window attention on the CPU engine (docs/benchmarks.md, "Sliding-window attention"):
# llama-100m's shape written as MistralForCausalLM twice with the same seeded weights, once with
# sliding_window WINDOW and once with none, then dev.tandem.bench.KvCacheDtypes' engine section on
# each (decode at a TOKENS-token context, batch 1 and 4, and a whole-prompt prefill of TOKENS, KV in
# bf16), one JVM per model, ROUNDS interleaved rounds.
#   benchmarks/scripts/sliding_window.sh [out-dir]   (WINDOW=1024 TOKENS=8192 ROUNDS=2)
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-sliding-window}"
window="${WINDOW:-1024}"
tokens="${TOKENS:-8192}"
mkdir -p "$out"
./tandem --version >/dev/null  # builds if stale
./tandem model create --shape llama-100m --seed 1 --dtype bf16 --out "$out/shape" >/dev/null
for w in none "$window"; do
  python3 - "$out/shape/config.json" "$out/config-$w.json" "$w" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["architectures"], c["model_type"] = ["MistralForCausalLM"], "mistral"
c["sliding_window"] = None if sys.argv[3] == "none" else int(sys.argv[3])
json.dump(c, open(sys.argv[2], "w"), indent=1)
PY
  [ -f "$out/window-$w/config.json" ] || ./tandem model create --config "$out/config-$w.json" --seed 1 --dtype bf16 --out "$out/window-$w" >/dev/null
done
java=("$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow)
cp="cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*"
for round in $(seq 1 "${ROUNDS:-2}"); do
  for w in none "$window"; do
    echo "== sliding_window $w, round $round" | tee -a "$out/sliding-window.txt"
    "${java[@]}" -cp "$cp" dev.tandem.bench.KvCacheDtypes "$out/window-$w" "$(nproc)" "$tokens" engine bf16 2>&1 \
      | grep -v -e ' INFO ' -e '^WARNING' | tee -a "$out/sliding-window.txt"
  done
done
