#!/usr/bin/env bash
# KV transfer throughput per backend against its link's limit: local vs memory copy (same run),
# tcp vs iperf3 over the same loopback (run just before and after). Needs iperf3 (apt-get install iperf3).
set -euo pipefail
cd "$(dirname "$0")/../.."
java="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java"
[ -f cli/target/tandem-cli-0.1.0-SNAPSHOT.jar ] || ./tandem --version >/dev/null
iperf() {
  iperf3 -s -1 -p 5399 >/dev/null 2>&1 &
  sleep 1
  iperf3 -c 127.0.0.1 -p 5399 -t 3 -l 1M -f g | grep receiver | sed 's/^/iperf3 loopback, 1 MiB writes: /'
}
iperf
"$java" --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow \
  -cp "cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*" dev.tandem.bench.TransferThroughput 2>/dev/null
iperf
