#!/usr/bin/env bash
# bench/micro/http2-bench.sh: HTTP/2 figures with h2load (nghttp2-client). Servers pinned to core 0, h2load to
# core 1, one event loop each, same JVM flags as bench/http.sh. Servers:
#   herald      herald.http.bench-app, :mode :event-loop, h2c with prior knowledge  (proto h2)
#   herald_h1   the same server, HTTP/1.1 with h2load --h1 (16-deep pipelining)      (proto h1)
#   netty_h2    herald.http.http2.RawH2Server: raw Netty h2c, same stream model      (proto h2)
# Per run: requests/s (h2load), server CPU time per request (utime+stime from /proc/PID/stat over the run),
# appended to bench/results/http2.csv. Env: DURATION [5], WARMUP [400000] requests per server before measuring (the
# JIT needs them: a 5 s warm-up at the cold rate left raw Netty h2 at a fifth of its speed), ROUNDS [3], CONNS [16], STREAMS [16] (h2load
# -m: concurrent streams per connection, or pipeline depth for h1), NICE [""].
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DURATION=${DURATION:-5}; WARMUP=${WARMUP:-400000}; ROUNDS=${ROUNDS:-3}; CONNS=${CONNS:-16}; STREAMS=${STREAMS:-16}
NICE=${NICE:-}
RESULTS=${RESULTS:-$ROOT/bench/results/http2.csv}
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64} PATH=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin:$PATH
export MAVEN_OPTS=--sun-misc-unsafe-memory-access=allow
WORK=$(mktemp -d /tmp/herald-h2bench.XXXXXX)
declare -A PID PORT
cleanup() { for s in "${!PID[@]}"; do kill "${PID[$s]}" 2>/dev/null || true; wait "${PID[$s]}" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
cd "$ROOT"
mvn -o -q -pl http test-compile
mvn -o -q -pl http dependency:build-classpath -Dmdep.outputFile="$WORK/cp.txt" -Dmdep.includeScope=test >/dev/null
CP="http/target/test-classes:http/target/classes:http/src/main/clojure:http/src/test/clojure:$(cat "$WORK/cp.txt")"
FLAGS=(-Xmx1g -Xms1g -XX:+UseParallelGC --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow)
RUN=(); [ -n "$NICE" ] && RUN=(nice -n "$NICE")
COMMIT=$(git rev-parse --short HEAD)$(git diff --quiet -- http/src || echo +dirty)
start() { # name main-and-args...
  local s=$1; shift
  "${RUN[@]}" taskset -c 0 java "${FLAGS[@]}" -cp "$CP" "$@" >"$WORK/$s.log" 2>&1 &
  PID[$s]=$!
  [ -n "$NICE" ] && PID[$s]=$(pgrep -P "${PID[$s]}" java || echo "${PID[$s]}") # the JVM, not nice
  for _ in $(seq 600); do grep -qs '^READY ' "$WORK/$s.log" && break; sleep 0.1; done
  PORT[$s]=$(awk '/^READY /{print $2; exit}' "$WORK/$s.log")
  [ -n "${PORT[$s]}" ] || { cat "$WORK/$s.log"; exit 1; }
}
ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
run() { # server proto how-long ("-D secs" or "-n requests") -> prints "rps cpu_us_per_req requests"
  local s=$1 proto=$2 p=${PORT[$1]} extra=() c0 c1 out ok
  read -r -a how <<<"$3"
  [ "$proto" = h1 ] && extra=(--h1)
  c0=$(ticks "${PID[$s]}")
  out=$("${RUN[@]}" taskset -c 1 h2load "${extra[@]}" "${how[@]}" -c "$CONNS" -m "$STREAMS" -t 1 "http://127.0.0.1:$p/plaintext" 2>&1)
  c1=$(ticks "${PID[$s]}")
  ok=$(echo "$out" | awk '/^status codes:/{print $3}')
  local rps; rps=$(echo "$out" | awk '/^finished in/{gsub(",","",$4); print $4}')
  awk -v c=$((c1 - c0)) -v n="$ok" -v r="$rps" -v hz="$(getconf CLK_TCK)" \
    'BEGIN {printf "%.0f %.2f %d\n", r, (n > 0 ? c * 1e6 / hz / n : 0), n}'
}
start herald clojure.main -m herald.http.bench-app --port 0 --mode event-loop --io-threads 1
start netty_h2 herald.http.http2.RawH2Server --port 0 --threads 1
PORT[herald_h1]=${PORT[herald]}; PID[herald_h1]=${PID[herald]}
[ -s "$RESULTS" ] || echo "timestamp,commit,load_avg_1m,server,proto,rps,cpu_us_per_req,requests,options" >"$RESULTS"
for s in herald herald_h1 netty_h2; do proto=h2; [ $s = herald_h1 ] && proto=h1; run $s $proto "-n $WARMUP" >/dev/null; done
for r in $(seq "$ROUNDS"); do
  for s in netty_h2 herald herald_h1; do
    proto=h2; [ $s = herald_h1 ] && proto=h1
    read -r rps cpu n < <(run $s $proto "-D $DURATION")
    load=$(cut -d' ' -f1 /proc/loadavg)
    echo "round $r $s $proto rps=$rps cpu_us_per_req=$cpu requests=$n load=$load"
    echo "$(date -u +%FT%TZ),$COMMIT,$load,$s,$proto,$rps,$cpu,$n,h2load -c $CONNS -m $STREAMS -t 1 -D $DURATION; server@cpu0 h2load@cpu1; 1 event loop; ${FLAGS[*]}" >>"$RESULTS"
  done
done
