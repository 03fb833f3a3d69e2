#!/usr/bin/env bash
# Builds the container image's file tree under OUT (default deploy/docker/target/image):
#   OUT/opt/tandem/java   a jlink'ed Java 25 runtime holding only the modules Tandem uses
#   OUT/opt/tandem/lib    the launcher jar and its runtime dependencies
#   OUT/opt/tandem/bin/tandem   the entry point
# The Dockerfile copies this tree into its final image; integration-tests' ContainerImageTest
# builds it too and runs the entry point from it, proving the tree holds everything.
# Needs `./mvnw package` first (cli/target/*.jar and cli/target/lib).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$here/target/image}"
JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
jar="$root/cli/target/tandem-cli-0.1.0-SNAPSHOT.jar"
lib="$root/cli/target/lib"
[ -f "$jar" ] && [ -d "$lib" ] || { echo "image-tree: build first: ./mvnw -DskipTests package (missing $jar or $lib)" >&2; exit 1; }

echo "image-tree: finding the modules the jars use (jdeps)..." >&2
found="$("$JAVA_HOME/bin/jdeps" --ignore-missing-deps --print-module-deps --multi-release 25 \
  --class-path "$lib/*" "$jar" "$lib"/tandem-*.jar)"
# Loaded reflectively or by service lookup, which jdeps cannot see: logging, TLS, DNS, JMX.
extra="java.logging,java.management,java.naming,java.security.jgss,java.xml,jdk.crypto.ec,jdk.naming.dns,jdk.zipfs,jdk.localedata"
modules="$found,$extra"

rm -rf "$out/opt/tandem"
mkdir -p "$out/opt/tandem/bin" "$out/opt/tandem/lib"
echo "image-tree: jlink $modules" >&2
"$JAVA_HOME/bin/jlink" --add-modules "$modules" --strip-debug --no-header-files --no-man-pages \
  --output "$out/opt/tandem/java"
cp "$jar" "$lib"/*.jar "$out/opt/tandem/lib/"
cat > "$out/opt/tandem/bin/tandem" <<'LAUNCHER'
#!/bin/sh
# Tandem's entry point in the container image: every role, `tandem --help` for the list.
home="$(dirname "$(readlink -f "$0")")/.."
# TANDEM_JAVA_OPTS adds JVM flags (-XX:+UseTransparentHugePages for a router with a very large KV index).
exec "$home/java/bin/java" ${TANDEM_JAVA_OPTS:-} --sun-misc-unsafe-memory-access=allow \
  --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED \
  -cp "$home/lib/*" dev.tandem.cli.Main "$@"
LAUNCHER
chmod +x "$out/opt/tandem/bin/tandem"
echo "image-tree: $(du -sh "$out/opt/tandem" | cut -f1) in $out/opt/tandem" >&2
