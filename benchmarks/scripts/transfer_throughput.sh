#!/usr/bin/env bash
# KV transfer throughput per backend against its link's limit: local vs memory copy (same run),
# tcp vs iperf3 over the same loopback (run just before and after), ucx vs ucx_perftest's ucp_get
# between two processes (the ucx rows' ratios are against it). Needs iperf3 and ucx-utils (apt-get install iperf3 ucx-utils).
set -euo pipefail
cd "$(dirname "$0")/../.."
java="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java"
[ -f cli/target/tandem-cli-0.1.0-SNAPSHOT.jar ] || ./tandem --version >/dev/null
iperf() {
  iperf3 -s -1 -p 5399 >/dev/null 2>&1 &
  sleep 1
  iperf3 -c 127.0.0.1 -p 5399 -t 3 -l 1M -f g | grep receiver | sed 's/^/iperf3 loopback, 1 MiB writes: /'
}
perftest() {
  for size in 1048576 16777216 67108864 268435456; do
    ucx_perftest -p 13399 >/dev/null 2>&1 &
    sleep 1
    ucx_perftest 127.0.0.1 -p 13399 -t ucp_get -s "$size" -n 50 2>/dev/null | tail -1 \
      | awk -v s="$size" '{printf "ucx_perftest ucp_get %4d MiB: %.2f GB/s (%s MB/s)\n", s/1048576, $(NF-2)/1000, $(NF-2)}'
    wait
  done
}
export UCX_NET_DEVICES=lo
# ROUNDS=N repeats everything; BEFORE=<another checkout, built> also runs this benchmark against
# that checkout's agents in each round, right after this one's (a before/after in one run).
bench() { # label, classpath
  echo "--- $1"
  "$java" --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow \
    -cp "$2" dev.tandem.bench.TransferThroughput 2>/dev/null
}
for round in $(seq "${ROUNDS:-1}"); do
  [ "${ROUNDS:-1}" = 1 ] || echo "=== round $round"
  limits=$(perftest)
  echo "$limits"
  # "1:30.12,16:13.43,...": MiB and GB/s, for the ucx rows' ratios
  export TANDEM_UCX_PERFTEST=$(echo "$limits" | awk '{printf "%s%s:%s", (NR > 1 ? "," : ""), $3, $5}')
  iperf
  bench "this checkout" "cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*"
  if [ -n "${BEFORE:-}" ]; then
    bench "before: $BEFORE" "benchmarks/target/tandem-benchmarks-0.1.0-SNAPSHOT.jar:$BEFORE/cli/target/lib/*"
  fi
  iperf
done
