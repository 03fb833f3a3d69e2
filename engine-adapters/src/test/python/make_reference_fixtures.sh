#!/usr/bin/env bash
# Regenerates the PyTorch reference fixtures that ReferenceLogitsTest compares the engine against.
# Needs Debian's python3-torch (apt-get install -y python3-torch); CI does not run this, it uses the
# committed fixtures. Each case: a tiny model written by `tandem model create` from configs/NAME.json
# with a seed and dtype, then reference_logits.py on it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
out="$root/engine-adapters/src/test/resources/dev/tandem/engine/reference"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
# name config seed dtype [context the engine serves: LongRoPE's short factors where it is within the original, - for the model's]
# [quantization: q8_0 rounds the weights as --quantization q8_0 does]
cases=(
  "llama-f32 llama 11 f32"
  "llama-bf16 llama 12 bf16"
  "mistral-f32 mistral 41 f32"
  "mistral-bf16 mistral 42 bf16"
  "mistral-window-f32 mistral-window 43 f32"
  "mistral-window-bf16 mistral-window 44 bf16"
  "qwen2-f32 qwen2 21 f32"
  "qwen2-window-f32 qwen2-window 22 f32"
  "qwen3-f32 qwen3 31 f32"
  "qwen3-bf16 qwen3 32 bf16"
  "qwen3-f16 qwen3 33 f16"
  "phi3-f32 phi3 61 f32"
  "phi3-window-bf16 phi3-window 62 bf16"
  "gemma3-f32 gemma3 51 f32"
  "gemma3-bf16 gemma3 52 bf16"
  "gemma3-layer-types-f32 gemma3-layer-types 53 f32"
  "gemma2-f32 gemma2 54 f32"
  "gemma2-bf16 gemma2 55 bf16"
  "phi4-longrope-f32 phi4-longrope 63 f32"
  "phi4-longrope-bf16 phi4-longrope 64 bf16"
  "phi3-longrope-short-f32 phi3-longrope-short 65 f32 64"
  "llama-q8_0-f32 llama 13 f32 - q8_0"
  "qwen3-q8_0-bf16 qwen3-q8 34 bf16 - q8_0"
)
for c in "${cases[@]}"; do
  read -r name config seed dtype context quantization <<<"$c"
  [ "$context" = "-" ] && context=""
  "$root/tandem" model create --config "$here/configs/$config.json" --seed "$seed" --dtype "$dtype" --out "$work/$name" >/dev/null
  QUANTIZE="${quantization:-}" /usr/bin/python3 "$here/reference_logits.py" "$out/$name.json" "$work/$name" "$seed" "$dtype" ${context:+"$context"}
  echo "wrote $out/$name.json"
done
