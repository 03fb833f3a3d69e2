#!/usr/bin/env bash
# How long `tandem serve` takes from launch to a healthy frontend, and the memory it then holds:
# aggregated (one worker) and disaggregated (one prefill and one decode worker, over tcp and over
# ucx), rounds interleaved across the checkouts given (each a built Tandem tree: compare a change
# with the commit before it), default model (the tiny Qwen3 shape, 1 GiB of KV per worker).
#   benchmarks/scripts/worker_startup.sh [OUT] [TREE...]      (ROUNDS=3; TREE defaults to this one)
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-/tmp/tandem-startup}"
shift || true
trees=("$@")
[ ${#trees[@]} -gt 0 ] || trees=("$here")
rounds="${ROUNDS:-3}"
mkdir -p "$out"
export UCX_NET_DEVICES="${UCX_NET_DEVICES:-lo}"
for t in "${trees[@]}"; do "$t/tandem" --version >/dev/null; done  # builds each if stale

modes=("agg:" "disagg-tcp:--mode disagg --kv-transfer tcp" "disagg-ucx:--mode disagg --kv-transfer ucx")
results="$out/startup.tsv"
printf 'tree\tmode\tround\tready_s\trss_mb\n' > "$results"
for round in $(seq 1 "$rounds"); do
  for m in "${modes[@]}"; do
    mode="${m%%:*}"
    for t in "${trees[@]}"; do
      port=$((18000 + RANDOM % 1000))
      log="$out/$(basename "$t")-$mode-$round.log"
      start=$(date +%s.%N)
      # shellcheck disable=SC2086
      "$t/tandem" serve --port "$port" ${m#*:} > "$log" 2>&1 &
      pid=$!
      until curl -sf -o /dev/null "http://127.0.0.1:$port/health"; do
        kill -0 "$pid" 2>/dev/null || { echo "$t $mode: serve exited (see $log)" >&2; exit 1; }
        sleep 0.05
      done
      ready=$(echo "$(date +%s.%N) - $start" | bc)
      rss=$(( $(ps -o rss= -p "$pid") / 1024 ))
      kill "$pid"; wait "$pid" 2>/dev/null || true
      printf '%s\t%s\t%s\t%.2f\t%s\n' "$(basename "$t")" "$mode" "$round" "$ready" "$rss" | tee -a "$results"
    done
  done
done
echo "== median ready time and resident memory per tree and mode ($results)"
python3 - "$results" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
for key in sorted({(r["tree"], r["mode"]) for r in rows}):
    mine = [r for r in rows if (r["tree"], r["mode"]) == key]
    print("%-12s %-11s ready %5.2f s (%s)  rss %5d MB" % (key[0], key[1], statistics.median(float(r["ready_s"]) for r in mine),
          ", ".join(r["ready_s"] for r in mine), statistics.median(int(r["rss_mb"]) for r in mine)))
PY
