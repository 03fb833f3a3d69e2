#!/usr/bin/env bash
# The KV cache dtype, f32 (what the engine stored before 16-bit caches) beside bf16 and f16, in one
# run (docs/benchmarks.md, "KV cache in 16 bits"):
#   1. dev.tandem.bench.KvCacheDtypes on qwen3-0.6b's shape: KV tokens per GiB, and the pull of a
#      4,096-token prompt's KV over every transfer backend
#   2. the same benchmark on llama-100m: decode and whole-prompt prefill speed at 2,048 tokens, one
#      dtype per JVM, ROUNDS (3) interleaved rounds
#   3. benchmarks/scripts/disagg_interference.sh's CASES once per KV dtype in DTYPES (through
#      TANDEM_KV_CACHE_DTYPE, which every worker reads): the long prompt's disaggregated TTFT
#   benchmarks/scripts/kv_dtype.sh [out-dir]   (ROUNDS=3 DTYPES="f32 bf16" CASES="disagg slow-always slow-auto" LONG=3500 ARRIVALS=2)
# The slow-* cases throttle loopback with tc: they need root.
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-kv-dtype}"
dtypes="${DTYPES:-f32 bf16}"
cases="${CASES:-disagg slow-always slow-auto}"
cache="${TANDEM_CACHE:-$HOME/.cache/tandem}/bench-models"
mkdir -p "$out" "$cache"
./tandem --version >/dev/null  # builds if stale
for shape in qwen3-0.6b llama-100m; do
  [ -f "$cache/$shape/config.json" ] || ./tandem model create --shape "$shape" --seed 1 --dtype bf16 --out "$cache/$shape" >/dev/null
done
java=("$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow)
cp="cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*"
export UCX_NET_DEVICES="${UCX_NET_DEVICES:-lo}"
bench() { "${java[@]}" -Dtandem.chart="$out/kv-dtype-transfer.png" -cp "$cp" dev.tandem.bench.KvCacheDtypes "$@" 2>&1 | grep -v -e ' INFO ' -e '^WARNING'; }
echo "== capacity and transfer (qwen3-0.6b)" | tee "$out/kv-dtypes.txt"
bench "$cache/qwen3-0.6b" "$(nproc)" 4096 capacity,transfer | tee -a "$out/kv-dtypes.txt"
# One dtype per JVM (kernels compile for the dtype they see), interleaved over ROUNDS rounds.
for round in $(seq 1 "${ROUNDS:-3}"); do
  for dtype in f32 bf16 f16; do
    echo "== engine (llama-100m), round $round" | tee -a "$out/kv-dtypes.txt"
    bench "$cache/llama-100m" "$(nproc)" 2048 engine "$dtype" | tee -a "$out/kv-dtypes.txt"
  done
done
for dtype in $dtypes; do
  echo "== disaggregated, KV in $dtype" | tee -a "$out/kv-dtypes.txt"
  TANDEM_KV_CACHE_DTYPE="$dtype" CASES="$cases" STREAMS="${STREAMS:-0}" LONG="${LONG:-3500}" ARRIVALS="${ARRIVALS:-2}" \
    benchmarks/scripts/disagg_interference.sh "$out/disagg-$dtype" | sed "s/^/kv=$dtype /" | tee -a "$out/kv-dtypes.txt"
done
