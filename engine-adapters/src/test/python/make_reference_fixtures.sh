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
# [quantization: q8_0 or q4_0 rounds the weights as --quantization does, - for none]
# [a LoRA adapter merged into the weights: rank:alpha:seed:dtype[:rslora], written by `tandem model create-lora`]
# ONLY="name ..." regenerates only those cases.
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
  "llama-q4_0-f32 llama-q4 16 f32 - q4_0"
  "qwen3-q4_0-bf16 qwen3-q4 37 bf16 - q4_0"
  "llama-lora-f32 llama 15 f32 - - 8:16:71:f32"
  "phi3-lora-bf16 phi3 67 bf16 - - 4:8:72:bf16"
  "qwen3-lora-rslora-f32 qwen3 36 f32 - - 16:8:73:f32:rslora"
  "llama-q4_0-lora-f32 llama-q4 17 f32 - q4_0 8:16:74:f32"
)
for c in "${cases[@]}"; do
  read -r name config seed dtype context quantization lora <<<"$c"
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then continue; fi
  [ "$context" = "-" ] && context=""
  [ "$quantization" = "-" ] && quantization=""
  "$root/tandem" model create --config "$here/configs/$config.json" --seed "$seed" --dtype "$dtype" --out "$work/$name" >/dev/null
  spec=""
  if [ -n "${lora:-}" ]; then
    IFS=: read -r rank alpha lseed ldtype rslora <<<"$lora"
    "$root/tandem" model create-lora --model "$work/$name" --out "$work/$name-lora" --rank "$rank" --alpha "$alpha" --seed "$lseed" \
      --dtype "$ldtype" ${rslora:+--rslora} >/dev/null
    spec="{\"rank\": $rank, \"alpha\": $alpha, \"seed\": $lseed, \"dtype\": \"$ldtype\", \"rslora\": $([ -n "${rslora:-}" ] && echo true || echo false)}"
  fi
  QUANTIZE="${quantization:-}" LORA="${lora:+$work/$name-lora}" LORA_SPEC="$spec" \
    /usr/bin/python3 "$here/reference_logits.py" "$out/$name.json" "$work/$name" "$seed" "$dtype" ${context:+"$context"}
  echo "wrote $out/$name.json"
done
# The encoders (EncoderReferenceTest): EncoderGenerator's models of seed 7 (bert) and 8 (xlm-roberta),
# reference_encoder.py on each.
for enc in "encoder-bert 7 bert" "encoder-xlm-roberta 8 xlm-roberta"; do
  read -r name seed type <<<"$enc"
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then continue; fi
  [ -f "$root/cli/target/tandem-cli-0.1.0-SNAPSHOT.jar" ] || (cd "$root" && ./mvnw -q install -DskipTests -Djazzer.skip)
  "${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java" -cp "$root/cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:$root/cli/target/lib/*" \
    dev.tandem.engine.modeltools.EncoderGenerator "$work/$name" "$seed" "$type"
  /usr/bin/python3 "$here/reference_encoder.py" "$work/$name" "$out/$name.json"
  echo "wrote $out/$name.json"
done
