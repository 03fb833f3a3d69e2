#!/usr/bin/env bash
# The GPU device check: one call on a GPU machine, about 8 minutes at most, everything written to
# $OUT. Prepare here first (benchmarks/gpu/prepare.sh builds .gpu/: a Java runtime and the jars),
# then run it there with the device tool, carrying .gpu:
#
#   run(command="benchmarks/gpu/device-check.sh", carry=[".gpu"], timeout_s=560)
#
# Steps, each under its own time limit so that one stuck step leaves the others' results:
#   1. nvidia-smi and the driver version                                  -> nvidia-smi.txt
#   2. the engine's cuda tests on the device (compute conformance suite, PyTorch reference logits,
#      host/device KV agreement, decode graphs, the whole engine and KV handed to and from a cpu
#      engine) and cuda-ipc between two processes (bytes, slices, a wrong key, a killed owner; its
#      copy rate) through JUnit's console launcher                       -> tests.txt, junit/
#   3. llama-100m and llama-0.6b (Qwen3-0.6B's shape) bf16 models made there, as `tandem model
#      create` makes them                                                  -> (MODELS, not returned)
#   4. cuda against cpu (logits, 32 greedy steps), then decode at batch 1/8/32/128 and prefill at
#      512/2,048/8,192 tokens on the engine with --compute cuda, the forward pass's decode step
#      alone at those batch sizes, and kernel-by-kernel breakdowns     -> gpu-check.json
#   5. the anchors in the same call: torch's device copy bandwidth and bf16 matmul rate, Hugging
#      Face transformers eager and with a static cache + torch.compile    -> anchors.json
#   6. one table of Tandem's figures beside the anchors, as ratios       -> table.txt, table.json
#      (and table.png, decode tokens/s and prefill ms, where matplotlib is installed)
# Without a GPU (here) it runs what it can and says what it skipped, to check the script itself.
set -uo pipefail
cd "$(dirname "$0")/../.."
# Everything is written to a work folder; where the device tool's $OUT is set, the main files are
# copied there at the end (the tool returns at most 8 files) with the rest in one archive.
out="${WORK:-target/gpu-check}"
models="${MODELS:-target/gpu-models}"
budget="${BUDGET_S:-500}"
mkdir -p "$out" "$models"
start=$(date +%s)
log() { echo "[device-check $(($(date +%s) - start))s] $*" | tee -a "$out/progress.txt" >&2; }
left() { echo $((budget - ($(date +%s) - start))); }
deliver() {
  if [ -n "${OUT:-}" ] && [ "$(cd "$out" && pwd)" != "$(cd "$OUT" && pwd)" ]; then
    for f in progress.txt table.txt table.json table.png gpu-check.json tests.txt; do
      [ -f "$out/$f" ] && cp "$out/$f" "$OUT/"
    done
    tar -C "$out" -czf "$OUT/device-check.tgz" .
  fi
}
trap deliver EXIT
if [ ! -f .gpu/jre.txz ]; then
  echo "device-check: no .gpu/jre.txz: run benchmarks/gpu/prepare.sh first and carry .gpu" >&2
  exit 2
fi
mkdir -p /tmp/tandem-gpu && tar -C /tmp/tandem-gpu -xJf .gpu/jre.txz
java=/tmp/tandem-gpu/jre/bin/java
jvm=(--add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC)
cp=".gpu/lib/*"

log "1. nvidia-smi"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi > "$out/nvidia-smi.txt" 2>&1
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv >> "$out/nvidia-smi.txt" 2>&1
  head -20 "$out/nvidia-smi.txt" >&2
else
  echo "no nvidia-smi: not a GPU machine; the cuda steps will say why they cannot run" | tee "$out/nvidia-smi.txt" >&2
fi

log "2. cuda tests on the device"
timeout 150 "$java" "${jvm[@]}" -jar .gpu/junit-console.jar execute \
  --class-path ".gpu/test-classes:$(ls .gpu/lib/*.jar | paste -sd:)" --disable-banner --details=summary --details-theme=ascii \
  --select-class dev.tandem.engine.compute.CudaBackendTest \
  --select-class dev.tandem.engine.builtin.CudaTransformerTest \
  --select-class dev.tandem.engine.builtin.CudaEngineTest \
  --select-class dev.tandem.engine.builtin.ReferenceLogitsTest \
  --select-class dev.tandem.engine.compute.ComputeBackendsTest \
  --select-class dev.tandem.transfer.cudaipc.CudaIpcDeviceTest \
  --reports-dir "$out/junit" > "$out/tests.txt" 2>&1
log "   tests exit $? ($(grep -E 'tests (successful|failed|skipped|aborted)' "$out/tests.txt" | tr -s ' ' | tr '\n' ';'))"
grep -h 'cuda-ipc read' "$out/tests.txt" >&2 || true

log "3. models"
for shape in llama-100m llama-0.6b; do
  if [ ! -f "$models/$shape/config.json" ]; then
    timeout 120 "$java" "${jvm[@]}" -cp "$cp" dev.tandem.bench.GpuCheck create "$models/$shape" "$shape" bf16 2>&1 | tail -2 >&2
  fi
done

log "4. cuda against cpu, then speed"
timeout $(( $(left) > 300 ? 240 : $(left) / 2 )) "$java" "${jvm[@]}" -Xmx16g -cp "$cp" dev.tandem.bench.GpuCheck check \
  "$out/gpu-check.json" "$models/llama-100m" "$models/llama-0.6b" 2>&1 | tee "$out/gpu-check.txt" | grep -v '^[0-9:.]* \[' >&2
log "   check exit ${PIPESTATUS[0]}"

# A model that failed, or whose greedy tokens parted from cpu's, is run again with CUDA graphs off
# (when time allows): the second file says whether the graphs were the cause.
if python3 - "$out/gpu-check.json" <<'PY' 2>/dev/null
import json, sys
models = json.load(open(sys.argv[1])).get("models", [])
bad = any("error" in m or m.get("greedy_identical_steps", 0) < m.get("greedy_steps", 0) for m in models)
sys.exit(0 if bad or not models else 1)
PY
then
  if [ "$(left)" -gt 200 ]; then
    log "4b. again with CUDA graphs off"
    timeout $(( $(left) / 3 )) "$java" "${jvm[@]}" -Xmx16g -Dtandem.cuda.graphs=false -cp "$cp" dev.tandem.bench.GpuCheck check \
      "$out/gpu-check-nographs.json" "$models/llama-100m" 2>&1 | tee "$out/gpu-check-nographs.txt" | grep -v '^[0-9:.]* \[' >&2
  fi
fi

log "5. anchors (torch, transformers) in the remaining $(left) s"
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  timeout $(( $(left) > 30 ? $(left) - 20 : 10 )) python3 benchmarks/gpu/anchors.py "$out/anchors.json" \
    "$models/llama-100m" "$models/llama-0.6b" 2>&1 | tee "$out/anchors.txt" | grep '^\[anchors\]' >&2
else
  echo "no torch with CUDA here: anchors skipped" | tee "$out/anchors.txt" >&2
fi

log "6. table"
python3 benchmarks/gpu/table.py "$out" "$models" >&2
log "done"
