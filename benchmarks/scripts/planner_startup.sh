#!/usr/bin/env bash
# The planner on the bursty trace against worker start-up time (and at a larger base rate): how
# much of what it misses is the first spike's wait for new workers. One simulate run per setting
# (each beside its static-peak and static-mean pools), then a table of the headline figures.
#   benchmarks/scripts/planner_startup.sh [OUT]        about 3 minutes here
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-planner-startup}"
mkdir -p "$out"
./tandem --version >/dev/null  # builds if stale
for setting in "20 30" "20 15" "20 10" "20 5" "100 30" "100 5"; do
  set -- $setting
  name="bursty-rate$1-startup$2"
  echo "== $name: tandem simulate --trace bursty --rate $1 --predictor holt-winters --season-s 900 --startup-s $2" | tee "$out/$name.txt"
  ./tandem simulate --trace bursty --rate "$1" --predictor holt-winters --season-s 900 --startup-s "$2" \
    --json "$out/$name.json" --chart "$out/$name.png" 2>>"$out/$name.err" | tee -a "$out/$name.txt"
done
python3 - "$out" <<'PY' | tee "$out/table.md"
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
print("| base rate (req/s) | start-up (s) | within both SLAs | static-peak pool (P + D), its attainment | worker-s ÷ static-peak's | goodput/worker ÷ static-peak's | ÷ static-mean's |")
print("|---|---|---|---|---|---|---|")
for f in sorted(out.glob("bursty-rate*-startup*.json"), key=lambda p: (int(p.stem.split("rate")[1].split("-")[0]), -int(p.stem.split("startup")[1]))):
    d = json.loads(f.read_text())
    rate = f.stem.split("rate")[1].split("-")[0]
    startup = f.stem.split("startup")[1]
    pool = d["static_peak_pool"]
    print(f"| {rate} | {startup} | {100 * d['sla_attainment']:.2f}% | {pool['prefill']} + {pool['decode']}, {100 * d['static_peak_sla_attainment']:.2f}% |"
          f" {d['worker_seconds_vs_static_peak']:.3f} | {d['goodput_per_worker_vs_static_peak']:.2f}× | {d['goodput_per_worker_vs_static_mean']:.2f}× |")
PY
