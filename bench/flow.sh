#!/usr/bin/env bash
# bench/flow.sh: the Onyx 0.6.0 benchmark job on herald.flow's in-process runtime
# (input -> 4 tasks each incrementing an integer -> output that discards; segments carry a random int and a
# 100-byte payload), beside a hand-written single-thread fused loop doing the same work (the ceiling), in
# the same JVM and run. Bounded in time (each JVM under `timeout`; about 3-4 minutes in all). Prints last:
#   flow batch=1 herald_sps=<n> fused_sps=<n> ratio=<n>
#   flow batch=64 herald_sps=<n> fused_sps=<n> ratio=<n>
# and appends one row per batch size to bench/results/flow.csv (commit, cores, JVM, GC, options).
# Then (KAFKA=true, the default) the same job on the :kafka-streams runtime (herald.flow.bench-kafka) against a
# KRaft broker started in that JVM (free ports, temp dir, stopped with the JVM; bounded by `timeout`): the
# input topic preloaded with KAFKA_SEGMENTS segments, timed from submit-job until await-caught-up, once per
# processing guarantee. Prints, after the lines above:
#   flow runtime=kafka-streams sps=<n> guarantee=exactly-once-v2 partitions=<n> threads=<n> serde=codec ...
#   flow runtime=kafka-streams sps=<n> guarantee=at-least-once ...
# and appends one row per guarantee to bench/results/flow-kafka.csv.
# Knobs: SEGMENTS (default 3000000 per batch-64 round; batch 1 runs half), ROUNDS (default 5, medians),
#        FLOW_JVM_OPTS (default -Xms1g -Xmx1g -XX:+UseParallelGC), FUSE (default true);
#        KAFKA (true), KAFKA_SEGMENTS (1000000), KAFKA_PARTITIONS (4), KAFKA_THREADS (1),
#        KAFKA_GUARANTEES (exactly-once-v2,at-least-once), KAFKA_SERDE (codec; or edn), KAFKA_BATCH (0: Kafka
#        Streams' max.poll.records), KAFKA_COMMIT_MS (100, commit.interval.ms for both guarantees; 0: Kafka's
#        default per guarantee), KAFKA_CONFIG (k=v,... extra Kafka Streams properties), KAFKA_PROFILE (a directory:
#        one async-profiler CPU profile per guarantee, collapsed stacks, of the measured run).
set -euo pipefail
cd "$(dirname "$0")/.."
export JAVA_HOME="${JAVA_HOME:-$(build/find-jdk.sh)}"
export PATH="$JAVA_HOME/bin:$PATH"
export MAVEN_OPTS="${MAVEN_OPTS:---sun-misc-unsafe-memory-access=allow}"
SEGMENTS="${SEGMENTS:-3000000}"
ROUNDS="${ROUNDS:-5}"
FUSE="${FUSE:-true}"
FLOW_JVM_OPTS="${FLOW_JVM_OPTS:--Xms1g -Xmx1g -XX:+UseParallelGC}"
mkdir -p target/bench
cpfile=target/bench/flow-cp.txt
mvn -o -q -pl flow dependency:build-classpath -Dmdep.outputFile="$PWD/$cpfile" -Dmdep.includeScope=test >/dev/null \
  || mvn -q -pl flow dependency:build-classpath -Dmdep.outputFile="$PWD/$cpfile" -Dmdep.includeScope=test >/dev/null
mvn -o -q -pl flow compile >/dev/null || mvn -q -pl flow compile >/dev/null
cp="flow/src/main/clojure:flow/src/test/clojure:flow/target/classes:$(cat "$cpfile")"
out=target/bench/flow-last.txt
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
if [ "${KAFKA:-true}" = true ]; then
  KAFKA_SEGMENTS="${KAFKA_SEGMENTS:-1000000}"
  KAFKA_PARTITIONS="${KAFKA_PARTITIONS:-4}"
  KAFKA_THREADS="${KAFKA_THREADS:-1}"
  KAFKA_GUARANTEES="${KAFKA_GUARANTEES:-exactly-once-v2,at-least-once}"
  KAFKA_SERDE="${KAFKA_SERDE:-codec}"
  KAFKA_BATCH="${KAFKA_BATCH:-0}"
  KAFKA_COMMIT_MS="${KAFKA_COMMIT_MS:-100}"
  kout=target/bench/flow-kafka-last.txt
  kcp="$cp" kopts=()
  if [ -n "${KAFKA_PROFILE:-}" ]; then
    pw=target/bench/async-profiler
    mkdir -p "$pw" "$KAFKA_PROFILE"
    get=(dependency:copy -Dartifact=tools.profiler:async-profiler:4.2 -DoutputDirectory="$PWD/$pw" -Dmdep.stripVersion=true)
    mvn -o -q -B "${get[@]}" >/dev/null 2>&1 || mvn -q -B "${get[@]}" >/dev/null
    (cd "$pw" && unzip -qo async-profiler.jar 'linux-x64/libasyncProfiler.so')
    kcp="$cp:$pw/async-profiler.jar"
    kopts=(-XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints -Dherald.bench.profiler="$PWD/$pw/linux-x64/libasyncProfiler.so"
           -Dherald.bench.profile-dir="$(cd "$KAFKA_PROFILE" && pwd)")
  fi
  load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
  # shellcheck disable=SC2086
  timeout 150 java $FLOW_JVM_OPTS --sun-misc-unsafe-memory-access=allow "${kopts[@]}" -cp "$kcp" clojure.main -m herald.flow.bench-kafka \
    "$KAFKA_SEGMENTS" "$KAFKA_PARTITIONS" "$KAFKA_THREADS" "$KAFKA_GUARANTEES" "$KAFKA_SERDE" "$KAFKA_BATCH" "$KAFKA_COMMIT_MS" "${KAFKA_CONFIG:-}" 2>&1 \
    | grep -E '^(info|flow) ' | tee "$kout"
  kcsv=bench/results/flow-kafka.csv
  [ -f "$kcsv" ] || echo "date,commit,cores,jvm,gc,options,guarantee,segments,partitions,threads,serde,sps,steady_sps,startup_ms,cpu_us_per_segment,jvm_cores_used,loadavg_before,note" > "$kcsv"
  grep '^info kafka-streams guarantee=' "$kout" | while read -r line; do
    f() { grep -o " $1=[^ ]*" <<<"$line" | head -1 | cut -d= -f2; }
    g="$(f guarantee)"
    sps="$(grep "^flow runtime=kafka-streams .*guarantee=$g " "$kout" | grep -o 'sps=[0-9]*' | cut -d= -f2)"
    echo "$(date -u +%FT%TZ),$commit,$cores,$jvm,$gc,$FLOW_JVM_OPTS batch=$(f batch) commit_ms=$(f commit_ms) config=${KAFKA_CONFIG:-none},$g,$(f n),$(f partitions),$(f threads),$(f serde),$sps,$(f steady_sps),$(f startup_ms),$(f cpu_us_per_segment),$(f jvm_cores_used),$load_before,shared 2-core machine; broker in the benchmark JVM; cpu_ms=$(f cpu_ms | tr , ' ')" >> "$kcsv"
  done
fi
grep '^flow batch=' "$out"
if [ "${KAFKA:-true}" = true ]; then grep '^flow runtime=kafka-streams' "$kout"; fi
