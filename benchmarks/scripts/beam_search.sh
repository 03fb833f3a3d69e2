#!/usr/bin/env bash
# What vLLM-style beam search costs on the built-in engine: a width-W search beside the same request
# sampled with n=W (W sequences of the same length, the cheapest way to get as many) and beam width 1
# beside greedy decoding, in rounds whose order alternates, one `tandem serve` (one worker) for all.
#   benchmarks/scripts/beam_search.sh [out-dir]      (MODEL=llama-100m WIDTH=4 TOKENS=32 ROUNDS=3)
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-beam}"
shape="${MODEL:-llama-100m}"
width="${WIDTH:-4}"
tokens="${TOKENS:-32}"
rounds="${ROUNDS:-3}"
mkdir -p "$out"
source benchmarks/scripts/bench_model.sh
dir=$(bench_model "$shape")
port=$((18000 + RANDOM % 1000))
./tandem serve --model "$dir" --port "$port" > "$out/serve.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
echo "starting tandem serve --model $dir (log: $out/serve.log)"
until curl -sf -o /dev/null "http://127.0.0.1:$port/health"; do
  kill -0 "$pid" 2>/dev/null || { echo "serve exited (see $out/serve.log)" >&2; exit 1; }
  sleep 0.2
done
python3 - "$port" "$width" "$tokens" "$rounds" "$(basename "$dir")" <<'PY' | tee "$out/beam-search.txt"
import json, statistics, sys, time, urllib.request
port, width, tokens, rounds, model = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
prompt = "The lighthouse keeper walked along the shore every morning, collecting shells and writing letters to"

def run(extra):
    body = {"model": model, "prompt": prompt, "max_tokens": tokens, "ignore_eos": True, **extra}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    start = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as r:
        out = json.load(r)
    return time.perf_counter() - start, out

cases = [("greedy", {"temperature": 0}),
         ("beam, width 1", {"use_beam_search": True}),
         (f"sampled, n={width}", {"temperature": 1, "n": width, "seed": 1}),
         (f"beam, width {width}", {"use_beam_search": True, "n": width})]
run({"temperature": 0, "max_tokens": 4})  # warm the JIT
times = {name: [] for name, _ in cases}
for r in range(rounds):
    order = cases if r % 2 == 0 else list(reversed(cases))
    for name, extra in order:
        seconds, out = run(extra)
        assert out["usage"]["completion_tokens"] == tokens * len(out["choices"]), out["usage"]
        times[name].append(seconds)
        print(f"round {r + 1}  {name:<16} {seconds:7.3f} s", flush=True)
med = {name: statistics.median(v) for name, v in times.items()}
print(f"\n== median of {rounds} rounds, {tokens} tokens a sequence, model {model}")
print(f"{'request':<18}{'seconds':>9}{'ratio':>8}")
for name, anchor in [("greedy", None), ("beam, width 1", "greedy"), (f"sampled, n={width}", None), (f"beam, width {width}", f"sampled, n={width}")]:
    ratio = f"{med[name] / med[anchor]:7.2f}x" if anchor else "      --"
    print(f"{name:<18}{med[name]:9.3f}{ratio}")
print(f"beam, width {width}: {tokens} steps, {med[f'beam, width {width}'] / tokens * 1000:.1f} ms a step "
      f"({width} one-token generations each, after the first)")
PY
