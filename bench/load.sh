#!/usr/bin/env bash
# bench/load.sh: is herald-load's generator ever the bottleneck? Against the raw Netty hello server
# (herald.http.bench.RawNettyServer, GET /plaintext) pinned to core 0, runs wrk and `herald-load max` pinned
# to core 1 with the same connections, one after the other (ROUNDS rounds, medians), then `herald-load rate`
# at 50% of herald's max, then (STEPS=1, the default) one `herald-load rate` run stepping through 25%, 50% and
# 75% of herald's max on the same connections, DURATION each. The generator and the server share this
# machine's 2 cores (one each).
# Then (H2=1, the default) HTTP/2: against the raw Netty h2c server (herald.http.http2.RawH2Server) pinned to
# core 0, `h2load` (Debian's nghttp2-client, installed when missing and root) and `herald-load max --http2`
# pinned to core 1 with the same connections and streams per connection, one after the other (ROUNDS rounds,
# medians, after one warm-up of each).
# Prints `load_steps targets=<a,b,c> achieved=<x,y,z>`, then:
#   load wrk_rps=<n> herald_rps=<n> ratio=<herald/wrk> rate_target=<n> rate_achieved=<n>
#   load_h2 h2load_rps=<n> herald_rps=<n> ratio=<herald/h2load>
# Env: CONNECTIONS (32), DURATION seconds (10), ROUNDS (3), SERVER_CORE (0), CLIENT_CORE (1), STEPS (1), H2 (1),
# H1 (1; 0 runs the HTTP/2 part only), H2_CONNECTIONS (16), H2_STREAMS (16), H2_WARMUP requests (200000),
# H2_HL_WARMUP (5s: herald-load's own warm-up in each HTTP/2 round, which keeps its JVM's JIT compilation, on
# the client's core, out of the measured seconds), H2_BASE_JAR (a herald-load jar built from another commit: each
# HTTP/2 round runs it too, for an A/B in one run; prints `load_h2_base base_rps=<n> ratio=<herald/base>`).
# Appends a row to bench/results/load.csv (the steps in its notes) and one to bench/results/load-h2.csv. Bounded:
# about ROUNDS x (2 x DURATION + 15) + DURATION + 30 s, plus 3 x DURATION + 10 s with STEPS=1, plus
# ROUNDS x (2 x DURATION + 13) + 30 s with H2=1 (+ DURATION + 13 per round with H2_BASE_JAR).
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
tmp=$(mktemp -d); server_pid=""; h2_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; [ -n "$h2_pid" ] && kill "$h2_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

# the raw Netty server from the http module's test classes (written by the http bench)
for _ in $(seq 1 60); do [ -f http/src/test/java/herald/http/bench/RawNettyServer.java ] && break; echo "waiting for RawNettyServer..." >&2; sleep 10; done
mvn -o -q -B -pl http test-compile >&2
mvn -o -q -B -pl http dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile="$tmp/http.cp" >&2
mvn -o -q -B -pl load -am -DskipTests package >&2
hl() { HERALD_LOAD_JVM_OPTS="-Xmx1g -XX:+UseParallelGC" taskset -c "$CC" bin/herald-load "$@"; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
commit=$(git rev-parse --short=12 HEAD)
[ -n "$(git status --porcelain --untracked-files=no -- load bench/load.sh)" ] && commit="$commit-dirty"
jvm=$(java -version 2>&1 | sed -n 's/.*Runtime Environment \(.*\)/\1/p' | head -1 | tr ',' ' ')
if [ "${H1:-1}" = 1 ]; then
taskset -c "$SC" java -Xmx1g -XX:+UseParallelGC $unsafe --enable-native-access=ALL-UNNAMED \
  -cp "http/target/test-classes:$(cat "$tmp/http.cp")" herald.http.bench.RawNettyServer --port 0 --threads 1 >"$tmp/server.out" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do grep -q '^READY' "$tmp/server.out" 2>/dev/null && break; sleep 0.2; done
port=$(sed -n 's/^READY \([0-9]*\).*/\1/p' "$tmp/server.out" | head -1)
[ -n "$port" ] || { echo "server did not start:"; cat "$tmp/server.out"; exit 1; }
url="http://127.0.0.1:$port/plaintext"

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
echo "$(date -u +%FT%TZ),$commit,$(nproc),$jvm,ParallelGC,$C,$D,$ROUNDS,$wrk_rps,$herald_rps,$ratio,$target,$achieved,$p99,server pinned core $SC; wrk and herald-load pinned core $CC (1 thread each); the 2 cores are shared with the server and other jobs; medians of $ROUNDS rounds; GET /plaintext non-pipelined; load average $load_start at start and $(cut -d' ' -f1 /proc/loadavg) at end; rounds wrk=${wrk_runs[*]} herald=${hl_runs[*]}$steps_note" >>"$csv"
echo "load wrk_rps=$wrk_rps herald_rps=$herald_rps ratio=$ratio rate_target=$target rate_achieved=$achieved"
fi

# ---- HTTP/2: h2load and herald-load against the raw Netty h2c server, same connections and streams ----
[ "${H2:-1}" = 1 ] || exit 0
if ! command -v h2load >/dev/null && [ "$(id -u)" = 0 ]; then
  echo "# installing nghttp2-client (h2load)" >&2
  apt-get install -y -q nghttp2-client >&2 || { apt-get update -q >&2 && apt-get install -y -q nghttp2-client >&2; } || true
fi
command -v h2load >/dev/null || { echo "bench/load.sh: h2load is not installed (apt-get install -y nghttp2-client): no load_h2 line" >&2; exit 0; }
[ -n "$server_pid" ] && { kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null || true; server_pid=""; }
H2C=${H2_CONNECTIONS:-16}; H2S=${H2_STREAMS:-16}; H2W=${H2_WARMUP:-200000}; H2HW=${H2_HL_WARMUP:-5s}
taskset -c "$SC" java -Xmx1g -XX:+UseParallelGC $unsafe --enable-native-access=ALL-UNNAMED \
  -cp "http/target/test-classes:$(cat "$tmp/http.cp")" herald.http.http2.RawH2Server --port 0 --threads 1 >"$tmp/h2server.out" 2>&1 &
h2_pid=$!
for _ in $(seq 1 100); do grep -q '^READY' "$tmp/h2server.out" 2>/dev/null && break; sleep 0.2; done
h2port=$(sed -n 's/^READY \([0-9]*\).*/\1/p' "$tmp/h2server.out" | head -1)
[ -n "$h2port" ] || { echo "h2c server did not start:"; cat "$tmp/h2server.out"; exit 1; }
h2url="http://127.0.0.1:$h2port/plaintext"
h2load_load_start=$(cut -d' ' -f1 /proc/loadavg)
run_h2load() { taskset -c "$CC" h2load -c "$H2C" -m "$H2S" -t 1 "$@" "$h2url" 2>&1; }
run_hl_h2() { hl max "$h2url" --http2 -c "$H2C" --streams "$H2S" -t 1 "$@" -q; }
echo "# warm-up of the h2c server ($H2W requests of h2load, then herald-load for 5s)" >&2
run_h2load -n "$H2W" >/dev/null
run_hl_h2 -d 5s >/dev/null
h2l_runs=(); h2h_runs=(); h2b_runs=()
for r in $(seq 1 "$ROUNDS"); do
  one_h2load() { run_h2load -D "$D" | awk '/^finished in/{gsub(",","",$4); print $4}'; }
  one_hl() { run_hl_h2 -w "$H2HW" -d "${D}s" | sed -n 's/^herald-load mode=max .*achieved_rps=\([0-9.]*\).*/\1/p'; }
  if [ $((r % 2)) -eq 1 ]; then w=$(one_h2load); h=$(one_hl); else h=$(one_hl); w=$(one_h2load); fi
  b=""
  if [ -n "${H2_BASE_JAR:-}" ]; then
    b=$(taskset -c "$CC" java -Xmx1g -XX:+UseParallelGC $unsafe --enable-native-access=ALL-UNNAMED -jar "$H2_BASE_JAR" \
          max "$h2url" --http2 -c "$H2C" --streams "$H2S" -t 1 -w "$H2HW" -d "${D}s" -q \
        | sed -n 's/^herald-load mode=max .*achieved_rps=\([0-9.]*\).*/\1/p')
    h2b_runs+=("$b")
  fi
  echo "h2 round $r: h2load_rps=$w herald_rps=$h${b:+ base_rps=$b} load=$(cut -d' ' -f1 /proc/loadavg)" >&2
  h2l_runs+=("$w"); h2h_runs+=("$h")
done
h2load_rps=$(median "${h2l_runs[@]}"); h2herald_rps=$(median "${h2h_runs[@]}")
h2ratio=$(awk -v h="$h2herald_rps" -v w="$h2load_rps" 'BEGIN {printf "%.3f", h / w}')
csv2=bench/results/load-h2.csv
[ -f "$csv2" ] || echo "date,commit,cores,jvm,gc,connections,streams,duration_s,rounds,h2load_rps,herald_rps,ratio,notes" >"$csv2"
echo "$(date -u +%FT%TZ),$commit,$(nproc),$jvm,ParallelGC,$H2C,$H2S,$D,$ROUNDS,$h2load_rps,$h2herald_rps,$h2ratio,raw Netty h2c server (RawH2Server; 1 event loop) pinned core $SC; h2load and herald-load max --http2 pinned core $CC (1 thread each); the 2 cores are shared with the server and other jobs; medians of $ROUNDS rounds after $H2W warm-up requests (herald-load warms up $H2HW in each round); GET /plaintext; load average $h2load_load_start at start and $(cut -d' ' -f1 /proc/loadavg) at end; rounds h2load=${h2l_runs[*]} herald=${h2h_runs[*]}" >>"$csv2"
echo "load_h2 h2load_rps=$h2load_rps herald_rps=$h2herald_rps ratio=$h2ratio"
if [ -n "${H2_BASE_JAR:-}" ]; then
  h2base_rps=$(median "${h2b_runs[@]}")
  echo "load_h2_base base_rps=$h2base_rps ratio=$(awk -v h="$h2herald_rps" -v b="$h2base_rps" 'BEGIN {printf "%.3f", h / b}') rounds=${h2b_runs[*]}"
fi
