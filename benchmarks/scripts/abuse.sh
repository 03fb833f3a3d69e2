#!/usr/bin/env bash
# Large-prompt abuse against `tandem serve --engine mocker` (context 32,768 tokens): how fast a
# 30 MB prompt is refused (curl's total time, upload included), how long a small chat takes
# alone, beside one such body and while 4 arrive at once, and the frontend's RSS before and after 10 refused bodies.
#
#   benchmarks/scripts/abuse.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-target/bench/abuse}"
port="${PORT:-8125}"
mkdir -p "$out"
python3 -c "
import json
open('$out/big.json','w').write(json.dumps({'model':'tandem/mocker-qwen3-0.6b','max_tokens':4,'messages':[{'role':'user','content':'word '*6_000_000}]}))"
small='{"model":"tandem/mocker-qwen3-0.6b","max_tokens":4,"messages":[{"role":"user","content":"hello"}]}'
./tandem serve --engine mocker --host 127.0.0.1 --port "$port" --max-body-bytes 67108864 >"$out/serve.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 120); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.5; done
url="http://127.0.0.1:$port/v1/chat/completions"
chat() { curl -s -o /dev/null -w "%{http_code} %{time_total}\n" -H 'Content-Type: application/json' "$@" "$url"; }
for _ in $(seq 200); do chat -d "$small" >/dev/null; done            # warm the serving path
rss() { ps -o rss= -p "$(pgrep -P $pid java || echo $pid)" 2>/dev/null | awk '{printf "%.0f", $1/1024}'; }
echo "RSS at start (after 200 small chats): $(rss) MB" | tee "$out/summary.txt"
echo "== a 30 MB prompt, alone (code, seconds; first is cold)" | tee -a "$out/summary.txt"
for _ in $(seq 6); do chat --data-binary @"$out/big.json"; done | tee -a "$out/summary.txt"
echo "== a small chat alone (code, seconds)" | tee -a "$out/summary.txt"
for _ in $(seq 5); do chat -d "$small"; done | tee -a "$out/summary.txt"
echo "== a small chat while one 30 MB prompt arrives (code, seconds)" | tee -a "$out/summary.txt"
for _ in $(seq 5); do
  chat --data-binary @"$out/big.json" >/dev/null & big=$!
  sleep 0.005
  chat -d "$small" | tee -a "$out/summary.txt"
  wait "$big"
done
echo "== a small chat while 4 30 MB prompts arrive at once (code, seconds)" | tee -a "$out/summary.txt"
for _ in $(seq 5); do
  bg=(); for _ in 1 2 3 4; do chat --data-binary @"$out/big.json" >/dev/null & bg+=($!); done
  sleep 0.01
  chat -d "$small" | tee -a "$out/summary.txt"
  wait "${bg[@]}"  # not the server
done
echo "== /live while 4 arrive (code, seconds)" | tee -a "$out/summary.txt"
bg=(); for _ in 1 2 3 4; do chat --data-binary @"$out/big.json" >/dev/null & bg+=($!); done
sleep 0.01; curl -s -o /dev/null -w "%{http_code} %{time_total}\n" "http://127.0.0.1:$port/live" | tee -a "$out/summary.txt"; wait "${bg[@]}"
for _ in $(seq 10); do chat --data-binary @"$out/big.json" >/dev/null; done
sleep 2
echo "RSS after 10 more refused 30 MB prompts: $(rss) MB" | tee -a "$out/summary.txt"
rm -f "$out/big.json"
