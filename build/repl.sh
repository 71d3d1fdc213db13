#!/usr/bin/env bash
# make repl: a Clojure REPL with every module (json, http, flow, load, feed) on the classpath, and a socket REPL
# (clojure.core.server) on REPL_HOST:REPL_PORT (127.0.0.1:5555) that editors and `nc` can connect to.
# The classpath is Maven's own: the modules' sources (edits are picked up by `require :reload`), their compiled
# Java classes (mvn compile, run here) and `mvn dependency:build-classpath` of each module, nothing by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
export JAVA_HOME="${JAVA_HOME:-$(build/find-jdk.sh)}"
export MAVEN_OPTS="${MAVEN_OPTS:---sun-misc-unsafe-memory-access=allow}"
host="${REPL_HOST:-127.0.0.1}"
port="${REPL_PORT:-5555}"
# the feed first: its classpath already holds herald-http's and herald-flow's, and its RocksDB (linux64) must win
# over the one herald-flow's optional kafka-streams would bring
modules=(feed load http json flow)
echo "make repl: compiling and asking Maven for the classpath..." >&2
mvn -B -ntp -q ${MVN_OFFLINE:-} -DskipTests compile dependency:build-classpath -DincludeScope=runtime \
  -Dmdep.outputFile=target/repl-classpath.txt >&2
entries=()
for m in "${modules[@]}"; do
  for d in "$m/src/main/clojure" "$m/src/main/resources" "$m/target/classes"; do
    [ -d "$d" ] && entries+=("$PWD/$d")
  done
done
for m in "${modules[@]}"; do
  IFS=: read -r -a jars < "$m/target/repl-classpath.txt" || true  # no newline at the end
  entries+=("${jars[@]}")
done
# one jar per artifact (the first wins, as Maven orders them), herald's own jars left out (the sources are there)
cp=$(printf '%s\n' "${entries[@]}" | grep -v '/dev/herald/' | awk '
  /\.jar$/ { n = split($0, p, "/"); key = p[n-2] "/" p[n-3]; if (seen[key]++) next }
  { print }' | paste -sd:)
echo "make repl: socket REPL on $host:$port (e.g. nc $host $port), and this terminal's REPL below" >&2
# the socket server starts once the REPL's own namespaces are loaded: a client connecting while the terminal REPL
# still loads clojure.pprint would otherwise race it ("pp does not exist")
exec "$JAVA_HOME/bin/java" ${REPL_JVM_OPTS:--XX:+UseParallelGC --enable-native-access=ALL-UNNAMED} -cp "$cp" clojure.main \
  -e "(apply require clojure.main/repl-requires)" \
  -e "(do (clojure.core.server/start-server {:name \"herald\" :address \"$host\" :port $port :accept 'clojure.core.server/repl}) nil)" \
  -r
