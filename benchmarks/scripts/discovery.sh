#!/usr/bin/env bash
# Discovery through a real etcd (docs/benchmarks.md, "Discovery"): worker churn (launch, admission,
# first routed request; kill -9 to removal, TRIALS times) and the router's decision time with
# 1,000 more workers registered and churning.
#   benchmarks/scripts/discovery.sh [out-dir]    (TRIALS=20 TTL=10)
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
out="${1:-/tmp/tandem-discovery}"
trials="${TRIALS:-20}"
ttl="${TTL:-10}"
command -v etcd >/dev/null || { echo "discovery.sh: needs etcd (apt-get install etcd-server)" >&2; exit 1; }
mkdir -p "$out"
./tandem --version >/dev/null  # builds if stale
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
peer=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
rm -rf "$out/etcd"
etcd --data-dir "$out/etcd" --listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port" \
  --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
  --initial-cluster "default=http://127.0.0.1:$peer" >"$out/etcd.log" 2>&1 &
etcd_pid=$!
trap 'kill $etcd_pid 2>/dev/null || true' EXIT
sleep 2
java=("$JAVA_HOME/bin/java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow)
cp="cli/target/tandem-cli-0.1.0-SNAPSHOT.jar:cli/target/lib/*"
"${java[@]}" -cp "$cp" dev.tandem.bench.DiscoveryBench "http://127.0.0.1:$port" churn "$trials" "$ttl" 2>"$out/churn.err" | tee "$out/churn.txt"
"${java[@]}" -cp "$cp" dev.tandem.bench.DiscoveryBench "http://127.0.0.1:$port" scale 2>"$out/scale.err" | tee "$out/scale.txt"
