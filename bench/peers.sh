#!/usr/bin/env bash
# bench/peers.sh: herald.http side by side with the Ring servers this machine can run, one after the other in
# one run: the benchmark's Ring handler (herald.http.bench-app/handler) on herald (event loop and virtual
# threads, as bench/http.sh starts them) and on Ring's Jetty adapter (ring.adapter.jetty/run-jetty 1.8.2 on
# Jetty 9.4, Debian's packages, unmodified: its defaults, and a fixed 8-thread pool), with raw Netty 4.2 as
# the ceiling. Same JDK and flags for every server, server pinned to SERVER_CPU and wrk to WRK_CPU.
# Tests: plaintext (pipelined PIPELINE deep), plaintext_np (not pipelined), json (not pipelined).
# Appends one row per measured run to bench/results/peers.csv and prints, last, one line per test and peer:
#   peers <test> herald_rps=<n> herald_vt_rps=<n> <peer>_rps=<n> ratio=<herald/peer> vt_ratio=<herald_vt/peer>
#     herald_cpu_us=<n> herald_vt_cpu_us=<n> <peer>_cpu_us=<n>           (peer: jetty, jetty_tuned, netty)
# Environment (defaults in brackets): DURATION [5], WARMUP [5], ROUNDS [3], CONNECTIONS [256], PIPELINE [16],
# IO_THREADS [1] (herald's and raw Netty's event loops), SERVER_CPU [0], WRK_CPU [1], NICE [""],
# SERVERS ["netty herald herald_vt jetty jetty_tuned"], TESTS ["plaintext plaintext_np json"],
# JETTY_TUNED_THREADS [8], RESULTS [bench/results/peers.csv], COMMIT [unknown] (names the revision when run
# outside a git checkout, e.g. from an exported copy). See bench/README.md.
set -euo pipefail

BENCH_NAME=peers
source "$(dirname "$0")/lib/common.sh"
bench_session "$0" "$@"

DURATION=${DURATION:-5}
WARMUP=${WARMUP:-5}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-256}
PIPELINE=${PIPELINE:-16}
IO_THREADS=${IO_THREADS:-1}
SERVER_CPU=${SERVER_CPU:-0}
WRK_CPU=${WRK_CPU:-1}
NICE=${NICE:-}
JETTY_TUNED_THREADS=${JETTY_TUNED_THREADS:-8}
RESULTS=${RESULTS:-$ROOT/bench/results/peers.csv}
read -r -a SERVER_LIST <<<"${SERVERS:-netty herald herald_vt jetty jetty_tuned}"
read -r -a TEST_LIST <<<"${TESTS:-plaintext plaintext_np json}"
# Debian's jars of ring-jetty-adapter 1.8.2 and what it needs beyond the http module's test classpath
# (which already has Clojure, ring-core 1.8.2 and ring-codec; its servlet-api 2.5 is replaced by 4.0.1)
DEBIAN_PACKAGES=(libring-jetty-adapter-clojure libring-servlet-clojure libjetty9-java libservlet-api-java wrk)
JETTY_JARS=(ring-jetty-adapter ring-servlet jetty9-server jetty9-http jetty9-io jetty9-util servlet-api-4.0.1)

for t in "${TEST_LIST[@]}"; do
  case $t in plaintext|plaintext_np|json) ;; *) die "unknown test $t (plaintext, plaintext_np, json)" ;; esac
done
bench_nice
bench_workdir herald-bench-peers

# --- tools -------------------------------------------------------------------------------------------------
missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null \
    || die "missing Debian packages ${missing[*]}: run apt-get install -y ${missing[*]} as root"
  log "installing ${missing[*]}"
  { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >"$WORK/apt.log" 2>&1 \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >>"$WORK/apt.log" 2>&1; } \
    || die "apt-get install ${missing[*]} failed (see $WORK/apt.log)"
fi
command -v wrk >/dev/null || die "wrk is missing: apt-get install wrk"
JETTY_CP=""
for j in "${JETTY_JARS[@]}"; do
  [ -f "/usr/share/java/$j.jar" ] || die "/usr/share/java/$j.jar is missing (apt-get install ${DEBIAN_PACKAGES[*]})"
  JETTY_CP="$JETTY_CP/usr/share/java/$j.jar:"
done
JETTY_VERSION=$(unzip -p /usr/share/java/jetty9-server.jar META-INF/MANIFEST.MF 2>/dev/null \
  | sed -n 's/^Implementation-Version: *\([^[:space:]]*\).*/\1/p' | head -1)

bench_jdk
bench_pinning

# --- build: HEAD's http sources, compiled into a directory of our own (as bench/http.sh does) ----------------
# in a git checkout: the committed sources of HEAD; elsewhere (an exported copy of a revision) the files on
# disk, with COMMIT naming the revision they came from
bench_build head
# the Jetty servers: the same classpath (same Clojure, same handler) plus Debian's Ring Jetty adapter and Jetty 9,
# without the test classpath's servlet-api 2.5 (Jetty 9.4 needs the Servlet 3.1+ API)
DEPS_NO_SERVLET=$(tr ':' '\n' <"$WORK/deps.txt" | grep -v '/servlet-api-[^/]*\.jar$' | paste -sd: -)
JCP="$ROOT/bench/peers:$BASE_CLASSPATH:$JETTY_CP$DEPS_NO_SERVLET"

bench_jvm_flags -XX:+UseParallelGC
OPTIONS="${JVM_FLAGS[*]}; io_threads=$IO_THREADS; conns=$CONNECTIONS; depth=$PIPELINE; duration=${DURATION}s; jetty=${JETTY_VERSION:-9.4}; $PINNING"

bench_pipeline_lua

# --- servers -----------------------------------------------------------------------------------------------
server_main() {
  case $1 in
    netty) echo "herald.http.bench.RawNettyServer --port 0 --threads $IO_THREADS" ;;
    herald) echo "clojure.main -m herald.http.bench-app --port 0 --mode event-loop --io-threads $IO_THREADS" ;;
    herald_vt) echo "clojure.main -m herald.http.bench-app --port 0 --mode virtual-threads --io-threads $IO_THREADS" ;;
    jetty) echo "clojure.main -m herald.bench.jetty-peer --port 0" ;;
    jetty_tuned) echo "clojure.main -m herald.bench.jetty-peer --port 0 --min-threads $JETTY_TUNED_THREADS --max-threads $JETTY_TUNED_THREADS" ;;
    *) die "unknown server $1 (netty, herald, herald_vt, jetty, jetty_tuned)" ;;
  esac
}

server_cp() { case $1 in jetty*) echo "$JCP" ;; *) echo "$CP" ;; esac; }
HEADS=1  # check_responses keeps each server's response heads (WORK/heads.NAME)

record() {
  local s=$1 t=$2 stamp
  stamp=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  [ -s "$RESULTS" ] || echo "timestamp,commit,cores,jvm,gc,options,server,test,rps,cpu_us_per_req,requests,non2xx,socket_errors,p50_ms,p99_ms,server_core_other_pct,loadavg" >"$RESULTS"
  echo "$stamp,$COMMIT,$CORES shared: $PINNING,$JVM_NAME,ParallelGC,$OPTIONS,$s,$t,$W_RPS,$W_CPU,$W_REQUESTS,$W_NON2XX,$W_ERRORS,$W_P50,$W_P99,$W_OTHER,$(cut -d' ' -f1 /proc/loadavg)" >>"$RESULTS"
  keep_run "$s" "$t"
}

for s in "${SERVER_LIST[@]}"; do server_main "$s" >/dev/null; done  # unknown names fail here, before any work

# --- the run: servers started one at a time (warm-up), then ROUNDS rounds, the order reversed every other round
log "JDK $JVM_NAME, Jetty ${JETTY_VERSION:-?}, $CORES cores ($PINNING), ${ROUNDS} rounds x ${DURATION}s, warm-up ${WARMUP}s, commit $COMMIT, load $(cut -d' ' -f1-3 /proc/loadavg)"
for s in "${SERVER_LIST[@]}"; do
  start_server "$s"
  for t in "${TEST_LIST[@]}"; do run_wrk "$s" "$t" "$WARMUP"; done
  log "$s warmed up"
done
run_rounds "${SERVER_LIST[*]}" "${TEST_LIST[*]}"

# --- summary -----------------------------------------------------------------------------------------------
for s in "${SERVER_LIST[@]}"; do
  for t in "${TEST_LIST[@]}"; do
    echo "info $s $t rps=$(median "$WORK/rps.$s.$t") cpu_us_per_req=$(median "$WORK/cpu.$s.$t" %.2f) (medians of $ROUNDS)"
  done
done
# Ring compliance caveats: the response heads (Date left out) each server sent for the same Ring responses
for s in "${SERVER_LIST[@]}"; do
  while read -r line; do echo "info head $s $line"; done <"$WORK/heads.$s"
done
if [[ " ${SERVER_LIST[*]} " == *" jetty"* ]]; then
  echo "info caveat jetty: ring-jetty-adapter 1.8.2 (Debian) implements Ring 1.8's spec over Servlet 4.0 on Jetty ${JETTY_VERSION:-9.4}:" \
    "String bodies go through a Writer and are sent chunked (no Content-Length), a Server header names Jetty," \
    "the request map is built by ring.util.servlet (plus :servlet-* keys); no Ring 1.11+ websocket responses"
fi
echo "info results appended to ${RESULTS#"$ROOT"/}; wrk and the server shared the machine's $CORES cores ($PINNING)"
for t in "${TEST_LIST[@]}"; do
  H=$(median "$WORK/rps.herald.$t"); V=$(median "$WORK/rps.herald_vt.$t")
  HC=$(median "$WORK/cpu.herald.$t" %.2f); VC=$(median "$WORK/cpu.herald_vt.$t" %.2f)
  for p in jetty jetty_tuned netty; do
    [[ " ${SERVER_LIST[*]} " == *" $p "* ]] || continue
    P=$(median "$WORK/rps.$p.$t"); PC=$(median "$WORK/cpu.$p.$t" %.2f)
    echo "peers $t herald_rps=$H herald_vt_rps=$V ${p}_rps=$P ratio=$(ratio "$H" "$P") vt_ratio=$(ratio "$V" "$P")" \
      "herald_cpu_us=$HC herald_vt_cpu_us=$VC ${p}_cpu_us=$PC"
  done
done
