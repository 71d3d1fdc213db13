#!/usr/bin/env bash
# bench/agents.sh: one generator against two agents at the same total rate. Against the raw Netty hello server
# (herald.http.bench.RawNettyServer, GET /plaintext, one thread), runs `herald-load rate` with RATE/s over
# CONNECTIONS for DURATION seconds after WARMUP, then the same split over two `herald-load agent` processes on
# loopback (RATE/2 and CONNECTIONS/2 each). The server, the agents and the coordinator share this machine's cores:
# this checks that the split, the start instant and the merge cost nothing, not the capacity of several machines.
# Prints:
#   agents one_rps=<n> one_p99_ms=<n> two_rps=<n> two_p99_ms=<n> skew_ms=<a,b> behind=<a,b> stalled=<a,b>
# Env: RATE (4000), CONNECTIONS (16), DURATION seconds (10), WARMUP seconds (3).
# Appends a row to bench/results/agents.csv. Bounded: about 2 x (DURATION + WARMUP) + 60 s plus the build.
set -euo pipefail
cd "$(dirname "$0")/.."
R=${RATE:-4000}; C=${CONNECTIONS:-16}; D=${DURATION:-10}; W=${WARMUP:-3}
JAVA_HOME=$(build/find-jdk.sh); export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
major=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
unsafe=""; [ "$major" -ge 23 ] && unsafe="--sun-misc-unsafe-memory-access=allow"
export MAVEN_OPTS="$unsafe"
load_start=$(cut -d' ' -f1 /proc/loadavg)
tmp=$(mktemp -d); pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

mvn -o -q -B -pl http test-compile >&2
mvn -o -q -B -pl http dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile="$tmp/http.cp" >&2
mvn -o -q -B -pl load -am -DskipTests package >&2
jar=load/target/herald-load.jar

java -Xmx512m -XX:+UseParallelGC $unsafe -cp "http/target/test-classes:$(cat "$tmp/http.cp")" \
  herald.http.bench.RawNettyServer --port 0 --threads 1 >"$tmp/server.out" 2>&1 &
pids+=($!)
for i in 1 2; do
  java -XX:+UseParallelGC $unsafe -jar "$jar" agent --port 0 --host 127.0.0.1 >"$tmp/agent$i.out" 2>"$tmp/agent$i.err" &
  pids+=($!)
done
for _ in $(seq 1 300); do grep -q '^READY' "$tmp/server.out" 2>/dev/null && break; sleep 0.2; done
port=$(sed -n 's/^READY \([0-9]*\).*/\1/p' "$tmp/server.out" | head -1)
[ -n "$port" ] || { echo "server did not start:"; cat "$tmp/server.out"; exit 1; }
agents=""
for i in 1 2; do
  for _ in $(seq 1 600); do grep -q listening "$tmp/agent$i.out" 2>/dev/null && break; sleep 0.2; done
  a=$(sed -n 's/.*listening on \([^ ]*\) .*/\1/p' "$tmp/agent$i.out"); [ -n "$a" ] || { echo "agent $i did not start"; cat "$tmp/agent$i.err"; exit 1; }
  agents="${agents:+$agents,}$a"
done
url="http://127.0.0.1:$port/plaintext"
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" | head -1; }
fields() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" | paste -sd, -; }

one=$(java -XX:+UseParallelGC $unsafe -jar "$jar" rate "$url" -R "$R" -c "$C" -d "${D}s" -w "${W}s" -q 2>/dev/null | grep '^herald-load mode=')
two_all=$(java -XX:+UseParallelGC $unsafe -jar "$jar" rate "$url" -R "$R" -c "$C" -d "${D}s" -w "${W}s" -q --agents "$agents" 2>/dev/null || true)
two=$(echo "$two_all" | grep '^herald-load mode=')
per=$(echo "$two_all" | grep '^herald-load agent=')
skew=$(echo "$per" | fields start_skew_ms)
behind=$(echo "$per" | fields behind)
stalled=$(echo "$per" | fields stalled)
line="agents one_rps=$(echo "$one" | field achieved_rps) one_p99_ms=$(echo "$one" | field p99_ms) two_rps=$(echo "$two" | field achieved_rps) two_p99_ms=$(echo "$two" | field p99_ms) skew_ms=$skew behind=$behind stalled=$stalled"
echo "$per"
echo "$line"

csv=bench/results/agents.csv
[ -f "$csv" ] || echo "time,commit,cores,jvm,gc,rate,connections,duration_s,warmup_s,one_rps,one_p99_ms,two_rps,two_p99_ms,skew_ms,behind,stalled,notes" >"$csv"
commit=$(git rev-parse --short=12 HEAD)
jvm=$(java -version 2>&1 | sed -n 's/.*Runtime Environment \(.*\)/\1/p' | head -1 | tr ',' ' ')
echo "$(date -u +%FT%TZ),$commit,$(nproc),$jvm,ParallelGC,$R,$C,$D,$W,$(echo "$one" | field achieved_rps),$(echo "$one" | field p99_ms),$(echo "$two" | field achieved_rps),$(echo "$two" | field p99_ms),${skew//,/;},${behind//,/;},${stalled//,/;},server (1 thread) two agents and the coordinator share the machine's cores unpinned; load average $load_start at start and $(cut -d' ' -f1 /proc/loadavg) at end" >>"$csv"
