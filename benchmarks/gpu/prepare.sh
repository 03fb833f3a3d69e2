#!/usr/bin/env bash
# Builds here, into .gpu/ (ignored by git), everything the GPU device check runs with: a jlinked
# Java runtime (the GPU machine has no Java), the engine's and kv-transfer's jars and their few
# dependencies (JCuda's natives cut to its driver binding), the engine's compiled tests and the
# cuda-ipc ones, and JUnit's console launcher.
# With the working tree, under the device tool's 64 MiB; the size is printed.
#
#   benchmarks/gpu/prepare.sh            then run benchmarks/gpu/device-check.sh there (carry .gpu)
set -euo pipefail
cd "$(dirname "$0")/../.."
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
if ! "$JAVA_HOME/bin/java" -version 2>&1 | grep -q '"25'; then
  JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64
fi
junit_console="${JUNIT_CONSOLE_VERSION:-1.14.4}"
logback="${LOGBACK_VERSION:-1.5.38}"

echo "prepare: building engine-adapters and benchmarks (tests compiled, not run)..." >&2
./mvnw -q -DskipTests install -pl engine-adapters,kv-transfer,benchmarks -am
rm -rf .gpu
mkdir -p .gpu/lib .gpu/deps
./mvnw -q dependency:copy-dependencies -pl engine-adapters -DincludeScope=runtime -DoutputDirectory="$PWD/.gpu/deps"
./mvnw -q dependency:copy -Dartifact="org.junit.platform:junit-platform-console-standalone:$junit_console" -DoutputDirectory="$PWD/.gpu"
for a in ch.qos.logback:logback-classic:$logback ch.qos.logback:logback-core:$logback; do
  ./mvnw -q dependency:copy -Dartifact="$a" -DoutputDirectory="$PWD/.gpu/lib"
done
mv .gpu/junit-platform-console-standalone-*.jar .gpu/junit-console.jar
# What the engine and its tests load; BouncyCastle and hash4j (common's, for TLS and block
# hashing) are not reached by the engine's forward pass or these tests.
for pattern in 'tandem-common-*.jar' 'jackson-*.jar' 'fastutil-core-*.jar' 'jcuda-1*.jar' 'slf4j-api-*.jar' 'hash4j-*.jar'; do
  cp .gpu/deps/$pattern .gpu/lib/
done
# JCuda's natives jar also carries the PTX compiler and NVRTC bindings (24 MB): keep the driver's.
natives="$PWD/$(ls .gpu/deps/jcuda-natives-*.jar)"
mkdir -p .gpu/natives
(cd .gpu/natives && unzip -q "$natives" 'lib/libJCudaDriver-*' 'META-INF/MANIFEST.MF' && "$JAVA_HOME/bin/jar" --create --file ../lib/jcuda-natives-driver.jar -C . lib)
rm -rf .gpu/deps .gpu/natives
cp engine-adapters/target/tandem-engine-adapters-*.jar kv-transfer/target/tandem-kv-transfer-*.jar benchmarks/target/tandem-benchmarks-*.jar .gpu/lib/
rm -f .gpu/lib/*-tests.jar .gpu/lib/*-sources.jar
cp -r engine-adapters/target/test-classes .gpu/test-classes
# kv-transfer's cuda-ipc tests (CudaIpcDeviceTest and the owner process it starts); its other
# tests (UCX, TCP) are not selected there and their dependencies are not carried.
mkdir -p .gpu/test-classes/dev/tandem/transfer
cp -r kv-transfer/target/test-classes/dev/tandem/transfer/cudaipc .gpu/test-classes/dev/tandem/transfer/

# fastutil-core is 6.6 MB of generated collections, of which the engine reaches a few hundred
# classes: keep the closure of what the jars and tests name (jdeps, every package included).
fastutil="$(ls .gpu/lib/fastutil-core-*.jar)"
jdeps_classes() { "$JAVA_HOME/bin/jdeps" -filter:none -verbose:class --multi-release 25 "$@" 2>/dev/null; }
jdeps_classes -cp ".gpu/lib/*" $(ls .gpu/lib/tandem-*.jar) .gpu/test-classes \
  | grep -o 'it\.unimi\.dsi\.fastutil\.[A-Za-z0-9_.$]*' | sort -u > .gpu/fastutil-roots.txt
jdeps_classes "$fastutil" | awk '$1 ~ /^it\.unimi/ && $3 ~ /^it\.unimi/ {print $1, $3}' > .gpu/fastutil-edges.txt
python3 - .gpu/fastutil-roots.txt .gpu/fastutil-edges.txt > .gpu/fastutil-keep.txt <<'PY'
import collections, sys
edges = collections.defaultdict(set)
for line in open(sys.argv[2]):
    a, b = line.split()
    edges[a].add(b)
seen, todo = set(), open(sys.argv[1]).read().split()
while todo:
    c = todo.pop()
    if c not in seen:
        seen.add(c)
        todo.extend(edges[c])
for c in sorted(seen):
    print(c.replace(".", "/") + ".class")
PY
mkdir -p .gpu/fastutil && (cd .gpu/fastutil && unzip -q "$PWD/../../$fastutil" $(cat ../fastutil-keep.txt))
"$JAVA_HOME/bin/jar" --create --file .gpu/lib/fastutil-core-used.jar -C .gpu/fastutil .
rm -rf .gpu/fastutil .gpu/fastutil-*.txt "$fastutil"

# The modules the engine, its tests and JUnit load, named here: jdeps would add the desktop module
# for Jackson's optional java.beans support and the benchmarks' charts, neither reached by the check.
modules="java.base,java.logging,java.xml,java.naming,java.management,java.sql,jdk.unsupported,jdk.incubator.vector,jdk.management"
echo "prepare: jlink $modules, then xz (about a minute)" >&2
rm -rf .gpu/jre
# Uncompressed modules, stripped, then the whole runtime in one xz archive: 15 MiB where jlink's
# own zip-9 left 45 MiB, which with the working tree (which travels too) passed the 64 MiB limit.
"$JAVA_HOME/bin/jlink" --add-modules "$modules" --strip-java-debug-attributes --strip-native-debug-symbols objcopy="$(command -v objcopy)" --no-man-pages --no-header-files --compress=zip-0 --output .gpu/jre
strip --strip-unneeded .gpu/jre/lib/server/libjvm.so 2>/dev/null || true # its symbols are a fifth of the runtime
tar -C .gpu -cf - jre | xz -9e -T0 > .gpu/jre.txz
rm -rf .gpu/jre
du -sh .gpu/jre.txz .gpu/lib .gpu/test-classes .gpu/junit-console.jar >&2
# What the device tool sends: the tracked tree (and untracked files git does not ignore) plus .gpu.
tree_bytes=$( (git ls-files -z; git ls-files -z --others --exclude-standard) | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
gpu_bytes=$(du -sb .gpu | cut -f1)
total=$(( (tree_bytes + gpu_bytes) / 1048576 ))
echo "prepare: .gpu is $((gpu_bytes / 1048576)) MiB, the working tree $((tree_bytes / 1048576)) MiB: ${total} MiB travel (the device tool carries 64 MiB)" >&2
if [ "$total" -gt 62 ]; then
  echo "prepare: too large to carry" >&2
  exit 1
fi
