#!/usr/bin/env bash
# KV routing under load: a workload matrix, each row under every router configuration, with the
# mocker engine at its real-time timing model (4 workers in one `tandem serve` process; the load
# generator in its own process). Writes OUT_DIR/ROW/CONFIG.rK.json per run (K = 1..REPEATS), then
# OUT_DIR/matrix.md and OUT_DIR/matrix.png (mean TTFT as a ratio to round-robin's in the same row
# and repeat, the median over repeats, with its range).
#
#   benchmarks/scripts/routing_matrix.sh [OUT_DIR]
#   ROWS="repeat-c16 system" CONFIGS="round-robin kv-seconds" REPEATS=3 benchmarks/scripts/routing_matrix.sh
#
# REPEATS (default 1) runs every row's configurations that many times, in a rotated order each
# time (so that no configuration always runs first or last in a row, next to the same neighbour),
# and the table reports medians: on two shared cores one run of a cell moves by about ±10%.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-target/bench/routing-matrix}"
mkdir -p "$out"
port="${PORT:-8126}"
url="http://127.0.0.1:$port"
java="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java"
pid=""
stop() { [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; pid=""; }
trap stop EXIT

# PIN=1 runs the load generator off the server's cores (taskset: the bench on CPU 0, the server on
# the others; SERVE_CPUS / BENCH_CPUS override), so that its work does not queue for the server's
# CPUs. The default (PIN=auto) pins only with 4 CPUs or more: on 2, the server confined to one
# core was slower still (docs/benchmarks.md, "KV routing under load").
ncpu=$(nproc)
if [ "${PIN:-auto}" = 1 ] || { [ "${PIN:-auto}" = auto ] && [ "$ncpu" -ge 4 ]; }; then
  serve_pin="taskset -c ${SERVE_CPUS:-1-$((ncpu - 1))}"
  bench_pin="taskset -c ${BENCH_CPUS:-0}"
else
  serve_pin=""
  bench_pin=""
fi

rows="${ROWS:-repeat-c1 repeat-c4 repeat-c16 issue-example system multi-turn no-reuse over-capacity mixed}"
repeats="${REPEATS:-1}"
configs="${CONFIGS:-round-robin random kv-blocks-1 kv-blocks-4 kv-blocks-16 kv-approximate kv-seconds}"

# Each row: KV blocks per worker, output tokens (EOS ignored), then the load generator's workload flags.
row_blocks() {
  case "$1" in
    over-capacity) echo 600 ;;   # 32 prefixes of 125 blocks (4,000) against 4 × 600 blocks
    issue-example) echo 1500 ;;  # issue 12's own example: 24 prefixes of 125 blocks fit the pool, not one worker
    *) echo 4000 ;;              # every row's recurring prefixes fit
  esac
}
row_output_tokens() {
  case "$1" in
    issue-example) echo 32 ;;
    *) echo 16 ;;
  esac
}
row_flags() {
  case "$1" in
    repeat-c1)     echo "--prefixes 8 --prefix-repeats 6 --prefix-tokens 2000 --input-tokens 2100 --concurrency 1 --seed 21" ;;
    repeat-c4)     echo "--prefixes 16 --prefix-repeats 8 --prefix-tokens 2000 --input-tokens 2100 --concurrency 4 --seed 22" ;;
    repeat-c16)    echo "--prefixes 24 --prefix-repeats 10 --prefix-tokens 2000 --input-tokens 2100 --concurrency 16 --seed 23" ;;
    issue-example) echo "--prefixes 24 --prefix-repeats 10 --prefix-tokens 2000 --input-tokens 2100 --concurrency 16 --seed 29" ;;
    system)        echo "--prefixes 1 --prefix-repeats 160 --prefix-tokens 1000 --input-tokens 1100 --concurrency 16 --seed 24" ;;
    multi-turn)    echo "--prefixes 16 --turns 6 --prefix-tokens 500 --input-tokens 150 --concurrency 8 --seed 25" ;;
    no-reuse)      echo "--num-requests 160 --input-tokens 1000 --concurrency 16 --seed 26" ;;
    over-capacity) echo "--prefixes 32 --prefix-repeats 6 --prefix-tokens 2000 --input-tokens 2100 --concurrency 8 --seed 27" ;;
    mixed)         echo "--num-requests 160 --input-tokens 200 --long-tokens 3000 --long-share 0.2 --concurrency 16 --seed 28" ;;
    *) echo "unknown row $1" >&2; return 1 ;;
  esac
}
config_flags() {
  case "$1" in
    round-robin)    echo "--router-mode round-robin" ;;
    random)         echo "--router-mode random" ;;
    kv-blocks-1)    echo "--router-mode kv --router-cost blocks --prefill-load-scale 1" ;;
    kv-blocks-4)    echo "--router-mode kv --router-cost blocks --prefill-load-scale 4" ;;
    kv-blocks-16)   echo "--router-mode kv --router-cost blocks --prefill-load-scale 16" ;;
    kv-approximate) echo "--router-mode kv --no-kv-events" ;;
    kv-seconds)     echo "--router-mode kv" ;;   # the default
    *) echo "unknown config $1" >&2; return 1 ;;
  esac
}

wait_health() {
  for _ in $(seq 240); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/health" || true)" = 200 ] && return 0
    sleep 0.5
  done
  echo "server did not become healthy" >&2; return 1
}

# The configurations in repeat K's order: the list rotated by K − 1.
rotated() {
  local k=$1; shift
  local list=("$@") n=$#
  for ((i = 0; i < n; i++)); do echo "${list[$(((i + k - 1) % n))]}"; done
}

./tandem --help >/dev/null  # builds once if needed
for row in $rows; do
  mkdir -p "$out/$row"
  # The summary reads every repeat on disk: an earlier run's extra repeats of these cells would join it.
  for config in $configs; do
    rm -f "$out/$row/$config".r*.json "$out/$row/$config".r*.txt "$out/$row/$config".r*-serve.log
  done
  for ((rep = 1; rep <= repeats; rep++)); do
    # shellcheck disable=SC2086
    for config in $(rotated "$rep" $configs); do
      echo "== $row, router $config, repeat $rep of $repeats"
      run="$out/$row/$config.r$rep"
      # shellcheck disable=SC2046
      $serve_pin ./tandem serve --engine mocker --host 127.0.0.1 --port "$port" --workers 4 --kv-blocks "$(row_blocks "$row")" \
        $(config_flags "$config") >"$run-serve.log" 2>&1 &
      pid=$!
      wait_health
      # Warm-up on prompts of another seed: the JIT, and the workers' prefill-cost fits, before measuring.
      $bench_pin ./tandem bench --url "$url" --num-requests 24 --input-tokens 600 --output-tokens 4 --concurrency 4 --seed 999 >/dev/null
      # shellcheck disable=SC2046
      $bench_pin ./tandem bench --url "$url" $(row_flags "$row") --output-tokens "$(row_output_tokens "$row")" \
        --json "$run.json" >"$run.txt"
      grep -E "^requests|^prompt tokens|^TTFT  " "$run.txt" || true
      stop
    done
  done
done

"$java" -cp "cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*" dev.tandem.bench.RoutingMatrix "$out" \
  "$(echo $rows | tr ' ' ',')" "$(echo $configs | tr ' ' ',')"
