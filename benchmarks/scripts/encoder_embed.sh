#!/usr/bin/env bash
# The encoder engine's embedding rate beside PyTorch (float32, eager, the same weights and the same
# computation: engine-adapters/src/test/python/reference_encoder.py's forward pass) on encoders of
# all-MiniLM-L6-v2's and bge-base-en-v1.5's shapes, inputs of 16, 128 and 512 tokens, in rounds
# alternating the two. Needs Debian's python3-torch and libopenblas0-pthread (without it Debian's torch
# multiplies through the generic reference BLAS, ~4 GFLOP/s here, and the anchor would be a straw man).
#   benchmarks/scripts/encoder_embed.sh [out-dir]     (ROUNDS=3 THREADS=2)
set -euo pipefail
cd "$(dirname "$0")/../.."
/usr/bin/python3 -c "import torch; assert 'generic' not in torch.__config__.show() or __import__('os').path.exists('/usr/lib/x86_64-linux-gnu/openblas-pthread')" \
  || { echo "needs python3-torch and libopenblas0-pthread (apt-get install -y python3-torch libopenblas0-pthread)" >&2; exit 1; }
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-encoder-embed}"
mkdir -p "$out"
[ -f cli/target/tandem-cli-0.1.0-SNAPSHOT.jar ] || ./mvnw -q install -DskipTests -Djazzer.skip
threads="${THREADS:-2}"
models="$(mktemp -d)"
trap 'rm -rf "$models"' EXIT
java=("$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -cp
  "cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*" dev.tandem.bench.EncoderThroughput)
[ -n "${BATCH_ONLY:-}" ] || : > "$out/encoder-embed.txt"
for round in $( [ -n "${BATCH_ONLY:-}" ] || seq 1 "${ROUNDS:-3}"); do
  for case in "minilm 16 200" "minilm 128 60" "minilm 512 12" "bge-base 16 100" "bge-base 128 20" "bge-base 512 4"; do
    read -r shape tokens inputs <<<"$case"
    echo "round $round: $shape, $tokens tokens" >&2
    "${java[@]}" "$models/$shape" "$shape" "$tokens" "$inputs" "$threads" 2>/dev/null | tee -a "$out/encoder-embed.txt"
    OPENBLAS_NUM_THREADS="$threads" /usr/bin/python3 benchmarks/scripts/encoder_torch.py "$models/$shape" "$shape" "$tokens" "$inputs" "$threads" | tee -a "$out/encoder-embed.txt"
  done
done
# Then Tandem alone with 16 inputs a step (the engine runs a step's inputs as one batch; PyTorch's
# forward here takes one input at a time): BATCH_ONLY=1 runs only these.
for round in $(seq 1 "${ROUNDS:-3}"); do
  for case in "minilm 16 320" "minilm 128 64" "bge-base 16 160" "bge-base 128 32"; do
    read -r shape tokens inputs <<<"$case"
    echo "round $round: $shape, $tokens tokens, 16 a step" >&2
    "${java[@]}" "$models/$shape" "$shape" "$tokens" "$inputs" "$threads" 16 2>/dev/null | tee -a "$out/encoder-embed.txt"
  done
done
"$JAVA_HOME/bin/java" -cp "cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*" dev.tandem.bench.EncoderChart \
  "$out/encoder-embed.txt" "$out/encoder-embed.png"
echo "wrote $out/encoder-embed.txt and encoder-embed.png" >&2
