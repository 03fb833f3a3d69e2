#!/usr/bin/env bash
# Frontend + router overhead: the client's TTFT minus the worker's own TTFT, with the mocker
# engine, at concurrency 1, 8 and 32. Starts `tandem serve`, warms it up, runs `tandem bench`.
#
#   benchmarks/scripts/frontend_overhead.sh [OUT_DIR]        # mocker at zero delay (SPEEDUP=0)
#   SPEEDUP=1 benchmarks/scripts/frontend_overhead.sh        # mocker at its real-time timing model
#   SERVE_ARGS="--tls-dir certs/worker" benchmarks/scripts/frontend_overhead.sh OUT   # extra serve flags
#   CONCURRENCIES="1 32" benchmarks/scripts/frontend_overhead.sh OUT             # other concurrencies
#   CONCURRENCIES= RATES="100 170" SPEEDUP=1 benchmarks/scripts/frontend_overhead.sh OUT   # Poisson arrivals instead
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-target/bench/frontend-overhead-speedup${SPEEDUP:-0}}"
port="${PORT:-8123}"
mkdir -p "$out"
./tandem serve --engine mocker --host 127.0.0.1 --port "$port" --speedup-ratio "${SPEEDUP:-0}" ${SERVE_ARGS:-} >"$out/serve.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 120); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
  sleep 0.5
done
url="http://127.0.0.1:$port"
# Warm-up: let the JIT compile the serving path before measuring.
./tandem bench --url "$url" --concurrency 8 --num-requests 3000 --input-tokens 128 --output-tokens 8 --seed 99 >/dev/null
for c in ${CONCURRENCIES-1 8 32}; do
  n=$((c * 200)); [ "$n" -lt 2000 ] && n=2000
  echo "== concurrency $c ($n requests, 128 prompt tokens, 8 output tokens)"
  ./tandem bench --url "$url" --concurrency "$c" --num-requests "$n" --input-tokens 128 --output-tokens 8 \
    --seed "$c" --json "$out/c$c.json" | tee "$out/c$c.txt"
done
# Open-loop arrivals (Poisson) as well, 40 s at each rate: no convoy of requests that start and
# end together, as a closed loop of equal requests makes.
for rate in ${RATES:-}; do
  echo "== rate $rate req/s ($((rate * 40)) requests, Poisson arrivals)"
  ./tandem bench --url "$url" --request-rate "$rate" --num-requests $((rate * 40)) --input-tokens 128 --output-tokens 8 \
    --seed 3 --json "$out/rate$rate.json" | tee "$out/rate$rate.txt"
done
kill $pid 2>/dev/null || true
echo "== anchor: one gRPC hop to a zero-delay worker, same process, no HTTP"
"${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java" -cp "cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*" \
  dev.tandem.bench.GrpcRoundTrip 3000 2>/dev/null | tee "$out/grpc-floor.txt"
