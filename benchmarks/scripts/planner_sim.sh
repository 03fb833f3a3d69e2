#!/usr/bin/env bash
# The planner in the simulator (docs/benchmarks.md, "Planner, simulated"): planner vs a static
# pool sized for the peak and one for the mean, with every predictor and with foresight of the
# true rate, on the bursty, diurnal and Mooncake-shaped traces, sized for p90 TTFT and for p99;
# then the simulator's speed at ~1,000 workers on one core.
#   benchmarks/scripts/planner_sim.sh [out-dir]
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-planner-sim}"
mkdir -p "$out"
./tandem --version >/dev/null  # builds if stale
run() {  # name args...
  local name=$1; shift
  echo "== $name: tandem simulate $*" | tee "$out/$name.txt"
  ./tandem simulate "$@" --compare-predictors --json "$out/$name.json" --chart "$out/$name.png" 2>>"$out/$name.err" | tee -a "$out/$name.txt"
}
# Spikes recur every 15 minutes; holt-winters is told that season.
run bursty --trace bursty --rate 20 --predictor holt-winters --season-s 900
# One compressed day over the hour.
run diurnal --trace diurnal --rate 20 --predictor holt-winters --season-s 3600
# Mooncake's published statistics (6.56 req/s, ISL 7,590, OSL 182), written out in its format.
run mooncake --trace mooncake --predictor holt --write-trace /tmp/mooncake-shaped.jsonl
# The same three with the prefill pool sized for p99 TTFT instead of p90 (the SLA counts every request).
run bursty-p99 --trace bursty --rate 20 --predictor holt-winters --season-s 900 --sla-percentile 99
run diurnal-p99 --trace diurnal --rate 20 --predictor holt-winters --season-s 3600 --sla-percentile 99
run mooncake-p99 --trace mooncake --predictor holt --sla-percentile 99
# ~1,000 workers: the Mooncake-shaped trace at 320× its rate for 15 minutes, the planner alone, one core.
echo "== scale: taskset -c 0 tandem simulate --trace mooncake --rate-scale 320 --duration-s 900 --planner-only" | tee "$out/scale.txt"
taskset -c 0 ./tandem simulate --trace mooncake --rate-scale 320 --duration-s 900 --planner-only --json "$out/scale.json" \
  2>>"$out/scale.err" | tee -a "$out/scale.txt"
