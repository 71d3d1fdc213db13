#!/usr/bin/env bash
# bench/lab/feed-server.sh: the feed service (feed/target/herald-feed.jar, built when missing) as a lab target,
# its data in the cell's directory. The lab injects JAVA, JAVA_OPTS and PORT (see docs/load.md, "The lab").
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
JAR="$ROOT/feed/target/herald-feed.jar"
if [ ! -f "$JAR" ]; then
  jdk=$("$ROOT/build/find-jdk.sh")
  (cd "$ROOT" && MAVEN_OPTS=--sun-misc-unsafe-memory-access=allow JAVA_HOME="$jdk" \
     mvn -B -q -o -ntp -pl feed -am -DskipTests -Dmaven.test.skip=true package >&2)
fi
data=${1:?usage: feed-server.sh DATA_DIR}
mkdir -p "$data"
# JAVA_OPTS is split on spaces, never globbed (-Xlog:gc*:... has a star)
set -f
# shellcheck disable=SC2086
PORT=${PORT:?} HOST=127.0.0.1 DATA_DIR="$data" exec "${JAVA:-java}" $JAVA_OPTS -jar "$JAR"
