#!/bin/bash
export JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64
cd /work/main
for i in 1 2; do
  for b in old new; do
    echo "=== $b run $i $(date +%T)"
    $JAVA_HOME/bin/java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xmx8g \
      -cp "$AB/new/tandem-cli-0.1.0-SNAPSHOT.jar:$AB/$b/lib/*" dev.tandem.bench.SamplingCost ~/.cache/tandem/bench-models/llama-100m $AB/out-$b-$i 2 8 3 2>/dev/null
  done
done
