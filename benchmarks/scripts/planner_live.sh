#!/usr/bin/env bash
# The planner live on this machine (docs/benchmarks.md, "Planner, live"): a real etcd, a frontend
# that queues requests while no worker serves (--worker-wait-s), and `tandem planner --connector
# local` starting and draining aggregated mocker workers from a measured profile (the mocker moves
# no KV between workers, so the run has one pool: --prefill-max 0 --decode-role agg), while
# `tandem bench` drives a step load: low → high → zero → low. Every bench phase reports its failed
# requests; the planner's replicas are sampled every second into replicas.csv and charted.
#   benchmarks/scripts/planner_live.sh [out-dir]
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-planner-live}"
command -v etcd >/dev/null || { echo "planner_live.sh: needs etcd (apt-get install etcd-server)" >&2; exit 1; }
mkdir -p "$out"
./tandem --version >/dev/null  # builds if stale
free() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
eport=$(free); epeer=$(free); fport=$(free); pport=$(free)
etcd_url="http://127.0.0.1:$eport"
rm -rf "$out/etcd" "$out/workers" "$out"/*.json "$out/replicas.csv"
etcd --data-dir "$out/etcd" --listen-client-urls "$etcd_url" --advertise-client-urls "$etcd_url" \
  --listen-peer-urls "http://127.0.0.1:$epeer" --initial-advertise-peer-urls "http://127.0.0.1:$epeer" \
  --initial-cluster "default=http://127.0.0.1:$epeer" >"$out/etcd.log" 2>&1 &
pids=($!)
trap 'kill ${pids[@]} 2>/dev/null || true; wait 2>/dev/null || true' EXIT
sleep 2
[ -f "$out/profile.json" ] || ./tandem profile --engine mocker --out "$out/profile.json" >"$out/profile.log" 2>&1
./tandem frontend --discovery etcd --etcd-endpoints "$etcd_url" --host 127.0.0.1 --port "$fport" --worker-wait-s 180 \
  >"$out/frontend.log" 2>&1 &
pids+=($!)
./tandem planner --connector local --profile "$out/profile.json" --frontend-url "http://127.0.0.1:$fport" \
  --interval-s 5 --startup-s 10 --prefill-min 0 --prefill-max 0 --decode-min 0 --decode-max 6 --decode-role agg \
  --idle-intervals-to-zero 6 --grace-intervals 1 --metrics-port "$pport" --log-dir "$out/workers" \
  --worker-args "--engine mocker --discovery etcd --etcd-endpoints $etcd_url --discovery-ttl-s 3 --drain-timeout-s 120" \
  >"$out/planner.log" 2>&1 &
planner=$!
pids+=($planner)
for _ in $(seq 120); do curl -sf "http://127.0.0.1:$fport/v1/models" >/dev/null && break; sleep 1; done
start=$(date +%s.%N)
( echo "t,phase,desired_prefill,desired_decode,serving_prefill,serving_decode,starting_prefill,starting_decode"
  while sleep 1; do
    m=$(curl -sf "http://127.0.0.1:$pport/metrics" || true)
    v() { echo "$m" | awk -v k="$1" -v p="$2" 'index($0, k "{pool=\"" p "\"}") == 1 {print $2}'; }
    printf '%.1f,%s,%s,%s,%s,%s,%s,%s\n' "$(echo "$(date +%s.%N) - $start" | bc)" "$(cat "$out/phase" 2>/dev/null || echo -)" \
      "$(v tandem_planner_desired_replicas prefill)" "$(v tandem_planner_desired_replicas decode)" \
      "$(v tandem_planner_actual_replicas prefill)" "$(v tandem_planner_actual_replicas decode)" \
      "$(v tandem_planner_starting_replicas prefill)" "$(v tandem_planner_starting_replicas decode)"
  done ) >"$out/replicas.csv" &
pids+=($!)
phase() {  # name rate requests
  echo "$1" >"$out/phase"
  echo "== phase $1: $2 req/s, $3 requests" | tee -a "$out/summary.txt"
  ./tandem bench --url "http://127.0.0.1:$fport" --request-rate "$2" --num-requests "$3" --input-tokens 512 --output-tokens 32 \
    --seed "$RANDOM" --json "$out/$1.json" 2>>"$out/bench.err" | grep -E "requests|failed|TTFT|ITL" | tee -a "$out/summary.txt"
}
: >"$out/summary.txt"
phase low 2 120
phase high 40 3600
echo zero >"$out/phase"; echo "== phase zero: no requests for 60 s" | tee -a "$out/summary.txt"; sleep 60
phase after-zero 2 120
sleep 3
kill "$planner"; wait "$planner" 2>/dev/null || true  # the planner drains the workers it started
grep -E "interval [0-9]+:" "$out/planner.log" | sed 's/^.*PlannerLoop - //' >"$out/decisions.txt" || true
"$JAVA_HOME/bin/java" -cp "cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*" dev.tandem.bench.PlannerLiveChart \
  "$out/replicas.csv" "$out/replicas.png"
echo "results in $out (summary.txt, decisions.txt, replicas.csv, replicas.png)"
