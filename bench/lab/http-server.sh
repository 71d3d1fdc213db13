#!/usr/bin/env bash
# bench/lab/http-server.sh MODE: herald.http's bench server (herald.http.bench-app, plaintext and JSON) in one
# execution mode (event-loop, virtual-threads, worker-pool) as a lab target. The lab injects the cell's JDK and
# JVM options: JAVA (the cell's bin/java), JAVA_OPTS (its GC, heap and GC log options), PORT. The first call
# compiles http/src/main/java and the bench servers (javac --release 21, as bench/http.sh does) into
# $HERALD_LAB_BUILD [target/bench/lab-http] and resolves the module's classpath; later calls reuse them.
set -euo pipefail
mode=${1:?usage: http-server.sh event-loop|virtual-threads|worker-pool}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${HERALD_LAB_BUILD:-$ROOT/target/bench/lab-http}
if [ ! -f "$BUILD/ok" ]; then
  mkdir -p "$BUILD"
  jdk=$("$ROOT/build/find-jdk.sh")
  (cd "$ROOT" && MAVEN_OPTS=--sun-misc-unsafe-memory-access=allow JAVA_HOME="$jdk" mvn -o -q -B -pl http dependency:build-classpath \
     -Dmdep.outputFile="$BUILD/deps.txt" -Dmdep.includeScope=test >/dev/null)
  find "$ROOT/http/src/main/java" "$ROOT/http/src/test/java/herald/http/bench" -name '*.java' >"$BUILD/sources.txt"
  "$jdk/bin/javac" --release 21 -nowarn -d "$BUILD/classes" -cp "$(cat "$BUILD/deps.txt")" @"$BUILD/sources.txt"
  touch "$BUILD/ok"
fi
CP="$ROOT/http/src/test/clojure:$ROOT/http/src/main/clojure:$ROOT/http/src/main/resources:$BUILD/classes:$(cat "$BUILD/deps.txt")"
# JAVA_OPTS is split on spaces, never globbed (-Xlog:gc*:... has a star)
set -f
# shellcheck disable=SC2086
exec "${JAVA:-java}" $JAVA_OPTS -cp "$CP" clojure.main -m herald.http.bench-app --port "${PORT:?}" --mode "$mode" --io-threads 1
