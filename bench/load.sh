#!/usr/bin/env bash
# bench/load.sh: is herald-load's generator ever the bottleneck? Against the raw Netty hello server
# (herald.http.bench.RawNettyServer, GET /plaintext) pinned to core 0, runs wrk and `herald-load max` pinned
# to core 1 with the same connections, one after the other (ROUNDS rounds, medians), then `herald-load rate`
# at 50% of herald's max, then (STEPS=1, the default) one `herald-load rate` run stepping through 25%, 50% and
# 75% of herald's max on the same connections, DURATION each. The generator and the server share this
# machine's 2 cores (one each).
# Prints `load_steps targets=<a,b,c> achieved=<x,y,z>` and LAST:
#   load wrk_rps=<n> herald_rps=<n> ratio=<herald/wrk> rate_target=<n> rate_achieved=<n>
# Env: CONNECTIONS (32), DURATION seconds (10), ROUNDS (3), SERVER_CORE (0), CLIENT_CORE (1), STEPS (1).
# Appends a row to bench/results/load.csv (the steps in its notes). Bounded: about
# ROUNDS x (2 x DURATION + 15) + DURATION + 30 s, plus 3 x DURATION + 10 s with STEPS=1.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
C=${CONNECTIONS:-32}; D=${DURATION:-10}; ROUNDS=${ROUNDS:-3}
SC=${SERVER_CORE:-0}; CC=${CLIENT_CORE:-1}
JAVA_HOME=$(build/find-jdk.sh); export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
major=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
unsafe=""; [ "$major" -ge 23 ] && unsafe="--sun-misc-unsafe-memory-access=allow"
export MAVEN_OPTS="$unsafe"
command -v wrk >/dev/null || { echo "bench/load.sh: wrk is not installed (apt-get install -y wrk)" >&2; exit 1; }
load_start=$(cut -d' ' -f1 /proc/loadavg)
tmp=$(mktemp -d); server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

# the raw Netty server from the http module's test classes (written by the http bench)
for _ in $(seq 1 60); do [ -f http/src/test/java/herald/http/bench/RawNettyServer.java ] && break; echo "waiting for RawNettyServer..." >&2; sleep 10; done
mvn -o -q -B -pl http test-compile >&2
mvn -o -q -B -pl http dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile="$tmp/http.cp" >&2
mvn -o -q -B -pl load -DskipTests package >&2
taskset -c "$SC" java -Xmx1g -XX:+UseParallelGC $unsafe --enable-native-access=ALL-UNNAMED \
  -cp "http/target/test-classes:$(cat "$tmp/http.cp")" herald.http.bench.RawNettyServer --port 0 --threads 1 >"$tmp/server.out" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do grep -q '^READY' "$tmp/server.out" 2>/dev/null && break; sleep 0.2; done
port=$(sed -n 's/^READY \([0-9]*\).*/\1/p' "$tmp/server.out" | head -1)
[ -n "$port" ] || { echo "server did not start:"; cat "$tmp/server.out"; exit 1; }
url="http://127.0.0.1:$port/plaintext"
hl() { HERALD_LOAD_JVM_OPTS="-Xmx1g -XX:+UseParallelGC" taskset -c "$CC" bin/herald-load "$@"; }

echo "# warm-up of the server (wrk 5s)" >&2
taskset -c "$CC" wrk -t1 -c"$C" -d5s "$url" >/dev/null
wrk_runs=(); hl_runs=()
for r in $(seq 1 "$ROUNDS"); do
  run_wrk() { taskset -c "$CC" wrk -t1 -c"$C" -d"${D}s" "$url" | sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p'; }
  run_hl() { hl max "$url" -c "$C" -t 1 -w 5s -d "${D}s" -q | sed -n 's/^herald-load mode=max .*achieved_rps=\([0-9.]*\).*/\1/p'; }
  # alternate the order so that neither tool always runs second
  if [ $((r % 2)) -eq 1 ]; then w=$(run_wrk); h=$(run_hl); else h=$(run_hl); w=$(run_wrk); fi
  echo "round $r: wrk_rps=$w herald_rps=$h" >&2
  wrk_runs+=("$w"); hl_runs+=("$h")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
wrk_rps=$(median "${wrk_runs[@]}"); herald_rps=$(median "${hl_runs[@]}")
ratio=$(awk -v h="$herald_rps" -v w="$wrk_rps" 'BEGIN {printf "%.3f", h / w}')
target=$(awk -v h="$herald_rps" 'BEGIN {printf "%d", h / 2}')
rate_out=$(hl rate "$url" -R "$target" -c "$C" -t 1 -w 2s -d "${D}s" -q)
echo "$rate_out" | grep -E '^ *(50|99|99.9)0*%|Requests/sec|WARNING' >&2 || true
achieved=$(echo "$rate_out" | sed -n 's/^herald-load mode=rate .*achieved_rps=\([0-9.]*\).*/\1/p')
p99=$(echo "$rate_out" | sed -n 's/^herald-load mode=rate .* p99_ms=\([0-9.]*\).*/\1/p')
steps_note=""
if [ "${STEPS:-1}" = 1 ]; then
  s1=$(awk -v h="$herald_rps" 'BEGIN {printf "%d", h / 4}'); s2=$((s1 * 2)); s3=$((s1 * 3))
  steps_out=$(hl rate "$url" -R "$s1:${D}s,$s2:${D}s,$s3:${D}s" -c "$C" -t 1 -w 2s -q)
  echo "$steps_out" | grep -E '^WARNING' >&2 || true
  steps_achieved=$(echo "$steps_out" | sed -n 's/^herald-load step=[0-9]* .*achieved_rps=\([0-9.]*\).*/\1/p' | paste -sd, -)
  steps_p99=$(echo "$steps_out" | sed -n 's/^herald-load step=[0-9]* .* p99_ms=\([0-9.]*\).*/\1/p' | paste -sd/ -)
  echo "load_steps targets=$s1,$s2,$s3 achieved=$steps_achieved p99_ms=$steps_p99"
  steps_note="; steps on the same connections targets $s1/$s2/$s3 achieved ${steps_achieved//,//} p99_ms $steps_p99"
fi

mkdir -p bench/results
csv=bench/results/load.csv
[ -f "$csv" ] || echo "date,commit,cores,jvm,gc,connections,duration_s,rounds,wrk_rps,herald_rps,ratio,rate_target,rate_achieved,rate_p99_ms,notes" >"$csv"
commit=$(git rev-parse --short=12 HEAD)
[ -n "$(git status --porcelain --untracked-files=no -- load bench/load.sh)" ] && commit="$commit-dirty"
:
jvm=$(java -version 2>&1 | sed -n 's/.*Runtime Environment \(.*\)/\1/p' | head -1 | tr ',' ' ')
echo "$(date -u +%FT%TZ),$commit,$(nproc),$jvm,ParallelGC,$C,$D,$ROUNDS,$wrk_rps,$herald_rps,$ratio,$target,$achieved,$p99,server pinned core $SC; wrk and herald-load pinned core $CC (1 thread each); the 2 cores are shared with the server and other jobs; medians of $ROUNDS rounds; GET /plaintext non-pipelined; load average $load_start at start and $(cut -d' ' -f1 /proc/loadavg) at end; rounds wrk=${wrk_runs[*]} herald=${hl_runs[*]}$steps_note" >>"$csv"
echo "load wrk_rps=$wrk_rps herald_rps=$herald_rps ratio=$ratio rate_target=$target rate_achieved=$achieved"
