#!/usr/bin/env bash
# Tandem's /v1/embeddings beside llama.cpp's embeddings (de.kherud:llama's bundled library, last-token
# pooling) on the same generated weights: the vectors compared (cosine of each text's two vectors),
# and seconds per embedding one text at a time (llama.cpp's way here), then Tandem with all texts in
# one request, and the same texts again (Tandem's prefix cache). Two rounds, engines alternating.
#   benchmarks/scripts/embeddings.sh [out-dir]      (MODEL=llama-0.6b TEXTS=32 WORDS=80 ROUNDS=2 THREADS=nproc)
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-embeddings}"
shape="${MODEL:-llama-0.6b}"
count="${TEXTS:-32}"
words="${WORDS:-80}"
rounds="${ROUNDS:-2}"
threads="${THREADS:-$(nproc)}"
mkdir -p "$out"
source benchmarks/scripts/bench_model.sh
dir=$(bench_model "$shape")
[ -f "$dir.gguf" ] || ./tandem model export-gguf --model "$dir" --out "$dir.gguf" >/dev/null
./mvnw -q -pl engine-comparison -am -DskipTests -Djazzer.skip package >/dev/null
compare_cp="engine-comparison/target/tandem-engine-comparison-0.1.0-SNAPSHOT.jar:engine-comparison/target/lib/*"
python3 - "$count" "$words" > "$out/texts.txt" <<'PY'
import random, sys
rng = random.Random(7)
vocab = ("the lighthouse keeper walked along shore every morning collecting shells writing letters to a friend who lived "
         "far away across sea storm boat harbour light night wind rain island village market bread fish net rope "
         "window lamp oil glass stone path cliff bird gull wave tide sand map compass story old young quiet").split()
for _ in range(int(sys.argv[1])):
    print(" ".join(rng.choice(vocab) for _ in range(int(sys.argv[2]))).capitalize() + ".")
PY
port=$((18000 + RANDOM % 1000))
# The client: "each" embeds the texts one a request, then all again in one (each prefix cached by
# then); "batch" embeds them all in one request. A warm-up text first either way.
cat > "$out/client.py" <<'PY'
import json, sys, time, urllib.request
mode, port, model, texts = sys.argv[1], sys.argv[2], sys.argv[3], [l.strip() for l in open(sys.argv[4]) if l.strip()]
def embed(inputs):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/embeddings", json.dumps({"model": model, "input": inputs}).encode(),
                                 {"Content-Type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as r:
        body = json.load(r)
    return time.perf_counter() - start, body
embed(["A warm-up text, not among the measured ones."])
if mode == "batch":
    print(json.dumps({"batch_seconds": embed(texts)[0]}))
    sys.exit()
tokens = 0
for t in texts:
    seconds, body = embed([t])
    tokens += body["usage"]["prompt_tokens"]
    print(json.dumps({"seconds": seconds, "embedding": body["data"][0]["embedding"]}))
seconds, body = embed(texts)
print(json.dumps({"cached_batch_seconds": seconds, "tokens": tokens}))
PY
# One fresh `tandem serve` a mode, so that the batch finds nothing cached.
tandem() {
  for mode in each batch; do
    ./tandem serve --model "$dir" --port "$port" --compute-threads "$threads" > "$out/serve.log" 2>&1 &
    pid=$!
    until curl -sf -o /dev/null "http://127.0.0.1:$port/health"; do
      kill -0 "$pid" 2>/dev/null || { echo "serve exited (see $out/serve.log)" >&2; exit 1; }
      sleep 0.2
    done
    python3 "$out/client.py" "$mode" "$port" "$(basename "$dir")" "$out/texts.txt" >> "$out/tandem-$1.jsonl"
    kill "$pid"; wait "$pid" 2>/dev/null || true
  done
}
java=("$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -Xmx4g)
rm -f "$out"/tandem-*.jsonl
for round in $(seq 1 "$rounds"); do
  echo "round $round: tandem"
  tandem "$round"
  echo "round $round: llama.cpp"
  "${java[@]}" -cp "$compare_cp" dev.tandem.comparison.LlamaCppEmbeddings "$dir.gguf" "$threads" < "$out/texts.txt" 2>/dev/null \
    > "$out/llamacpp-$round.jsonl"
done
python3 - "$out" "$rounds" "$shape" "$count" <<'PY' | tee "$out/embeddings.txt"
import json, math, statistics, sys
out, rounds, shape, count = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
def rows(path):
    return [json.loads(l) for l in open(path) if l.startswith("{")]
def unit(v):
    n = math.sqrt(sum(x * x for x in v)); return [x / n for x in v]
print(f"== {shape}, {count} texts, {rounds} rounds (tandem, llama.cpp alternating); one text a request unless said")
cos, ours, theirs, batch, cached, tokens = [], [], [], [], [], 0
for r in range(1, rounds + 1):
    t, l = rows(f"{out}/tandem-{r}.jsonl"), rows(f"{out}/llamacpp-{r}.jsonl")
    te = [x for x in t if "embedding" in x]
    cos += [sum(a * b for a, b in zip(unit(x["embedding"]), unit(y["embedding"]))) for x, y in zip(te, l)]
    ours.append(sum(x["seconds"] for x in te) / len(te)); theirs.append(sum(y["seconds"] for y in l) / len(l))
    batch.append(next(x["batch_seconds"] for x in t if "batch_seconds" in x) / count)
    cached.append(next(x["cached_batch_seconds"] for x in t if "cached_batch_seconds" in x) / count)
    tokens = next(x["tokens"] for x in t if "tokens" in x)
print(f"tokens a text (mean): {tokens / count:.1f}")
print(f"cosine(tandem, llama.cpp) per text: min {min(cos):.6f}, median {statistics.median(cos):.6f}")
print(f"{'engine, requests':<44}{'ms/embedding (per round)':>28}{'vs llama.cpp':>14}")
base = statistics.median(theirs)
for name, v in [("llama.cpp, one text at a time", theirs), ("tandem, one text a request", ours),
                ("tandem, all texts in one request", batch), ("tandem, the same texts again (prefix cached)", cached)]:
    print(f"{name:<44}{', '.join(f'{x * 1000:.1f}' for x in v):>28}{statistics.median(v) / base:>13.2f}x")
PY
