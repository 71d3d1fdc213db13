#!/usr/bin/env bash
# bench/micro/http-alloc.sh [TREE...]: bytes allocated per request on herald.http's HTTP/1.1 server path (GET,
# POST with Content-Length, chunked POST; 16 pipelined per read; event-loop mode; a constant Ring response) for
# each source tree given (default: this one), measured on one thread with ThreadMXBean#getThreadAllocatedBytes
# (bench/micro/HttpAlloc.java on the server's EmbeddedChannel pipeline). Trees are alternated ROUNDS times (3), so
# base and new can be compared side by side: `bench/micro/http-alloc.sh /work/wt/base .`. Each tree's http
# test classes are compiled first (mvn -o -pl http -am test-compile).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export JAVA_HOME=${JAVA_HOME:-$("$ROOT/build/find-jdk.sh")} && export PATH=$JAVA_HOME/bin:$PATH
export MAVEN_OPTS=${MAVEN_OPTS:---sun-misc-unsafe-memory-access=allow}
ROUNDS=${ROUNDS:-3}
TREES=("$@"); [ ${#TREES[@]} -eq 0 ] && TREES=("$ROOT")
WORK=$(mktemp -d /tmp/herald-alloc.XXXXXX); trap 'rm -rf "$WORK"' EXIT
declare -A CP
for t in "${TREES[@]}"; do
  t=$(cd "$t" && pwd)
  (cd "$t" && mvn -o -q -pl http -am test-compile && \
     mvn -o -q -pl http dependency:build-classpath -Dmdep.outputFile="$WORK/cp" -Dmdep.includeScope=test >/dev/null)
  CP[$t]="$t/http/target/test-classes:$t/http/target/classes:$(cat "$WORK/cp")"
done
for r in $(seq "$ROUNDS"); do
  for t in "${!CP[@]}"; do
    echo "# round $r tree $t ($(git -C "$t" rev-parse --short HEAD)$(git -C "$t" diff --quiet -- http/src || echo +dirty))"
    java -Xmx512m -XX:+UseParallelGC -Dio.netty.leakDetection.level=disabled --sun-misc-unsafe-memory-access=allow \
      -cp "${CP[$t]}" "$HERE/HttpAlloc.java"
  done
done
