#!/usr/bin/env bash
# bench/flow.sh: the Onyx 0.6.0 benchmark job on herald.flow's in-process runtime
# (input -> 4 tasks each incrementing an integer -> output that discards; segments carry a random int and a
# 100-byte payload), beside a hand-written single-thread fused loop doing the same work (the ceiling), in
# the same JVM and run. Bounded in time (well under 3 minutes). Prints last:
#   flow batch=1 herald_sps=<n> fused_sps=<n> ratio=<n>
#   flow batch=64 herald_sps=<n> fused_sps=<n> ratio=<n>
# and appends one row per batch size to bench/results/flow.csv (commit, cores, JVM, GC, options).
# Knobs: SEGMENTS (default 3000000 per batch-64 round; batch 1 runs half), ROUNDS (default 5, medians),
#        FLOW_JVM_OPTS (default -Xms1g -Xmx1g -XX:+UseParallelGC), FUSE (default true).
set -euo pipefail
cd "$(dirname "$0")/.."
export JAVA_HOME="${JAVA_HOME:-$(build/find-jdk.sh)}"
export PATH="$JAVA_HOME/bin:$PATH"
export MAVEN_OPTS="${MAVEN_OPTS:---sun-misc-unsafe-memory-access=allow}"
SEGMENTS="${SEGMENTS:-3000000}"
ROUNDS="${ROUNDS:-5}"
FUSE="${FUSE:-true}"
FLOW_JVM_OPTS="${FLOW_JVM_OPTS:--Xms1g -Xmx1g -XX:+UseParallelGC}"
mkdir -p bench/results/tmp
cpfile=bench/results/tmp/flow-cp.txt
mvn -o -q -pl flow dependency:build-classpath -Dmdep.outputFile="$PWD/$cpfile" -Dmdep.includeScope=test >/dev/null \
  || mvn -q -pl flow dependency:build-classpath -Dmdep.outputFile="$PWD/$cpfile" -Dmdep.includeScope=test >/dev/null
mvn -o -q -pl flow compile >/dev/null || mvn -q -pl flow compile >/dev/null
cp="flow/src/main/clojure:flow/src/test/clojure:flow/target/classes:$(cat "$cpfile")"
out=bench/results/tmp/flow-last.txt
# shellcheck disable=SC2086
timeout 170 java $FLOW_JVM_OPTS -cp "$cp" clojure.main -m herald.flow.bench "$SEGMENTS" "$ROUNDS" "$FUSE" | tee "$out"
commit="$(git rev-parse --short HEAD)$(git diff --quiet -- flow || echo -dirty)"
cores="$(nproc)"
jvm="$(java -version 2>&1 | head -1 | sed 's/"//g; s/,/ /g')"
gc="$(echo "$FLOW_JVM_OPTS" | grep -o -- '-XX:+Use[A-Za-z]*GC' || echo default)"
csv=bench/results/flow.csv
[ -f "$csv" ] || echo "date,commit,cores,jvm,gc,options,batch,herald_sps,fused_sps,ratio,note" > "$csv"
grep '^flow batch=' "$out" | while read -r _ b h f r; do
  echo "$(date -u +%FT%TZ),$commit,$cores,$jvm,$gc,$FLOW_JVM_OPTS segments=$SEGMENTS rounds=$ROUNDS fuse=$FUSE,${b#batch=},${h#herald_sps=},${f#fused_sps=},${r#ratio=},shared 2-core machine (other sessions running); one JVM: runtime and fused loop alternate" >> "$csv"
done
grep '^flow batch=' "$out"
