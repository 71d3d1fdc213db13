#!/usr/bin/env bash
# bench/soak.sh: herald.http for SOAK_MINUTES under mixed traffic, looking for what only time shows: leaks
# (Netty's leak detector at PARANOID), growing memory (RSS, heap after a full GC, direct memory sampled each
# minute) and errors on any client. The server is bench/soak (herald.bench.soak-app: plaintext, uploads digested
# and dropped, streamed downloads, WebSocket echo, /stats), on virtual threads with a GC log and native memory
# tracking. The traffic, all at once:
#   - herald-load rate at 70% (LOAD_SHARE) of the server's measured plaintext max (or RATE), 64 connections
#   - bench/soak/SoakClients.java: keep-alive churn (connections of 1-10 requests, then closed), slow readers of
#     4 MiB chunked streams, uploads of 1-16 MiB (Content-Length and chunked, SHA-256 checked), WebSocket
#     sessions of 50 echoed messages each (text and binary), every answer checked
# Prints a `sample ...` line per minute, then, last:
#   soak minutes=<n> rate=<n> rss_start_mb=<x> rss_end_mb=<x> rss_growth_pct=<x> direct_end_mb=<x> leaks=<n> errors=<n>
# rss_start is taken after the first minute of traffic (every path warmed up, the heap pre-touched), rss_end
# after the last; both after a full GC (jcmd GC.run). Targets: growth within 10%, 0 leaks, 0 errors.
# Environment (defaults in brackets): SOAK_MINUTES [30], RATE [measured: LOAD_SHARE of a 10 s max run after a
# 10 s warm-up], LOAD_SHARE [0.7], CONNECTIONS [64], CLIENTS ["4 4 2 4"] (churn, slow, upload and WebSocket
# client threads), STREAM_KB [4096], HEAP_MB [512], GC [-XX:+UseParallelGC], NICE [""], SOURCE [head],
# OUT [/tmp/herald-soak-<time>] (kept: server log, GC log, samples, native memory, herald-load's result),
# RESULTS [bench/results/soak.csv], LEAK_PROBE [""] (1: the server leaks one buffer on purpose at start, to
# show that leak reports are counted). See bench/README.md.
set -euo pipefail
BENCH_NAME=soak
source "$(dirname "$0")/lib/common.sh"
bench_session "$0" "$@"
bench_nice

SOAK_MINUTES=${SOAK_MINUTES:-30}
RATE=${RATE:-}
LOAD_SHARE=${LOAD_SHARE:-0.7}
CONNECTIONS=${CONNECTIONS:-64}
read -r -a CLIENTS <<<"${CLIENTS:-4 4 2 4}"
STREAM_KB=${STREAM_KB:-4096}
HEAP_MB=${HEAP_MB:-512}
GC=${GC:--XX:+UseParallelGC}
SOURCE=${SOURCE:-head}
OUT=${OUT:-/tmp/herald-soak-$(date -u +%Y%m%dT%H%M%SZ)}
RESULTS=${RESULTS:-$ROOT/bench/results/soak.csv}
mkdir -p "$OUT"

bench_workdir herald-bench-soak
bench_jdk
SERVER_CPU=0 WRK_CPU=1
CORES=$(nproc); ON_SERVER=(); PINNING="unpinned"
[ -n "${NICE:-}" ] && { ON_SERVER=(nice -n "$NICE"); PINNING="unpinned nice=$NICE"; }
bench_build "$SOURCE"
command -v jcmd >/dev/null || die "jcmd is missing (a JDK's bin)"
"$JAVA_HOME/bin/javac" -nowarn -d "$WORK/clients" "$ROOT/bench/soak/SoakClients.java" || die "javac SoakClients.java failed"

bench_jvm_flags "$GC"
JVM_FLAGS=("${JVM_FLAGS[@]/-Xmx1g/-Xmx${HEAP_MB}m}"); JVM_FLAGS=("${JVM_FLAGS[@]/-Xms1g/-Xms${HEAP_MB}m}")
JVM_FLAGS+=(-XX:+AlwaysPreTouch -Dio.netty.leakDetection.level=paranoid -XX:NativeMemoryTracking=summary
  "-Xlog:gc*,safepoint:file=$OUT/gc.log:utctime,level,tags")
server_main() { echo "clojure.main -m herald.bench.soak-app --port 0${LEAK_PROBE:+ --leak-probe true}"; }
server_cp() { echo "$ROOT/bench/soak:$CP"; }
check_responses() {
  local body
  body=$(curl -sf "http://127.0.0.1:${PORT[$1]}/plaintext") || die "$1: GET /plaintext failed"
  [ "$body" = "Hello, World!" ] || die "$1: /plaintext answered '$body'"
}
LOAD=("$ROOT/bin/herald-load")
export HERALD_LOAD_JVM_OPTS="-Xmx512m -XX:+UseParallelGC"
[ -n "${NICE:-}" ] && LOAD=(nice -n "$NICE" "${LOAD[@]}")

# --- helpers -----------------------------------------------------------------------------------------------
rss_mb() { awk '/^VmRSS:/ {printf "%.1f", $2 / 1024}' "/proc/${PID[soak]}/status"; }
stats() { curl -sf "http://127.0.0.1:${PORT[soak]}/stats" || echo "stats=unavailable"; }
field() { tr ' ' '\n' <<<"$1" | awk -F= -v k="$2" '$1 == k {print $2; exit}'; }
full_gc() { jcmd "${PID[soak]}" GC.run >/dev/null 2>&1 || log "jcmd GC.run failed"; }
leaks() { grep -c 'LEAK:' "$WORK/soak.log" || true; }
# live_mb: the heap after the last full GC that jcmd asked for, from the GC log (a /stats reading after it would
# include what the traffic allocated meanwhile)
live_mb() {
  grep -E 'Diagnostic Command|System.gc' "$OUT/gc.log" | grep -- '->' | tail -1 | sed 's/.*->\([0-9]*\)M.*/\1/'
}
# sample MINUTE [gc]: one line of RSS, heap, direct memory and counters (after a full GC with "gc": heap_live_mb)
sample() {
  local line live=""
  [ "${2:-}" = gc ] && { full_gc; live=" heap_live_mb=$(live_mb)"; }
  line="sample minute=$1 rss_mb=$(rss_mb)$live $(stats) leaks=$(leaks) load=$(cut -d' ' -f1 /proc/loadavg)"
  echo "$line" >>"$OUT/samples.txt"
  echo "$line"
}

# --- the run -----------------------------------------------------------------------------------------------
log "JDK $JVM_NAME, $CORES cores ($PINNING), commit $COMMIT, ${SOAK_MINUTES} min, load $(loadavg), out $OUT"
start_server soak
jcmd "${PID[soak]}" VM.native_memory baseline >/dev/null 2>&1 || true
URL="http://127.0.0.1:${PORT[soak]}/plaintext"
if [ -z "$RATE" ]; then
  "${LOAD[@]}" max "$URL" -c "$CONNECTIONS" -d 10s --quiet >"$OUT/warmup.txt" 2>&1 || die "warm-up failed: $OUT/warmup.txt"
  "${LOAD[@]}" max "$URL" -c "$CONNECTIONS" -d 10s --quiet >"$OUT/max.txt" 2>&1 || die "max run failed: $OUT/max.txt"
  MAX=$(sed -n 's/.*achieved_rps=\([0-9.]*\).*/\1/p' "$OUT/max.txt" | tail -1)
  [ -n "$MAX" ] || die "cannot read achieved_rps from $OUT/max.txt"
  RATE=$(awk -v m="$MAX" -v s="$LOAD_SHARE" 'BEGIN {printf "%d", m * s}')
  log "max ${MAX} req/s; soak rate $RATE req/s ($LOAD_SHARE)"
fi
sample 0 gc
SECONDS_TOTAL=$((SOAK_MINUTES * 60))
"${LOAD[@]}" rate "$URL" -R "$RATE" -c "$CONNECTIONS" -d "${SECONDS_TOTAL}s" --timeout 30s --quiet -o "$OUT/load" \
  >"$OUT/load.txt" 2>&1 &
LOAD_PID=$!; PID[load]=$LOAD_PID
# the clients and the minute clock start when herald-load sends (its interval log appears when its recorded run
# starts; a JVM starting on a busy machine can take minutes)
for i in $(seq 1 600); do
  [ -s "$OUT/load/latency.hlog" ] && break
  kill -0 "$LOAD_PID" 2>/dev/null || die "herald-load exited before sending: $OUT/load.txt"
  sleep 1
done
log "herald-load sends ${RATE} req/s; starting the clients"
"${ON_SERVER[@]}" "$JAVA_HOME/bin/java" -Xmx512m -XX:+UseParallelGC -cp "$WORK/clients" SoakClients \
  "${PORT[soak]}" "$SECONDS_TOTAL" "${CLIENTS[@]}" "$STREAM_KB" >"$OUT/clients.txt" 2>"$OUT/clients-errors.txt" &
CLIENTS_PID=$!; PID[clients]=$CLIENTS_PID
START=$(date +%s)
RSS_START=""; DIRECT_START=""
for m in $(seq 1 "$SOAK_MINUTES"); do
  while [ $(($(date +%s) - START)) -lt $((m * 60 - 2)) ]; do
    kill -0 "${PID[soak]}" 2>/dev/null || die "the server died (log: $WORK/soak.log)"
    sleep 1
  done
  if [ "$m" -eq 1 ]; then
    line=$(sample 1 gc); echo "$line"; RSS_START=$(field "$line" rss_mb); HEAP_START=$(field "$line" heap_live_mb)
  elif [ "$m" -lt "$SOAK_MINUTES" ]; then
    sample "$m"
  fi
done
rc=0; wait "$LOAD_PID" || rc=$?; [ "$rc" -le 2 ] || log "herald-load exited $rc"
wait "$CLIENTS_PID" || log "the clients exited $?"
unset "PID[load]" "PID[clients]"
line=$(sample "$SOAK_MINUTES" gc); echo "$line"
# the leak detector reports on allocations after a leaked buffer was collected: a few more requests after the GC
for i in 1 2 3 4 5; do curl -sf -o /dev/null "http://127.0.0.1:${PORT[soak]}/stream?kb=256" || true; done
sleep 2
jcmd "${PID[soak]}" VM.native_memory summary.diff >"$OUT/native-memory-diff.txt" 2>&1 || true
cp "$WORK/soak.log" "$OUT/server.log"
RSS_END=$(field "$line" rss_mb); HEAP_END=$(field "$line" heap_live_mb)
# Netty's direct memory: its own counter, or the JDK's direct pool when Netty allocates through it (the larger;
# with Netty's cleaner-based buffers both count the same buffers)
DIRECT_END=$(awk -v a="$(field "$line" direct_pool_mb)" -v b="$(field "$line" netty_direct_mb)" \
  'BEGIN {printf "%.1f", (a > b ? a : b)}')
LEAKS=$(leaks)
LOAD_ERRORS=$(sed -n 's/^herald-load mode=rate.* errors=\([0-9]*\).*/\1/p' "$OUT/load.txt" | tail -1)
ACHIEVED=$(sed -n 's/^herald-load mode=rate.* achieved_rps=\([0-9.]*\).*/\1/p' "$OUT/load.txt" | tail -1)
P99=$(sed -n 's/^herald-load mode=rate.* p99_ms=\([0-9.]*\).*/\1/p' "$OUT/load.txt" | tail -1)
CLIENT_LINE=$(tail -1 "$OUT/clients.txt")
CLIENT_ERRORS=$(field "$CLIENT_LINE" errors)
[ -n "$LOAD_ERRORS" ] || { log "no summary from herald-load (see $OUT/load.txt)"; LOAD_ERRORS=1; }
[ -n "$CLIENT_ERRORS" ] || { log "no summary from the clients (see $OUT/clients.txt)"; CLIENT_ERRORS=1; }
ERRORS=$((LOAD_ERRORS + CLIENT_ERRORS))
GROWTH=$(awk -v a="$RSS_START" -v b="$RSS_END" 'BEGIN {if (a > 0) printf "%.1f", 100 * (b - a) / a; else print "nan"}')
PAUSES=$(awk '/\[safepoint/ && /Total: / {n++; v = $0; sub(/.*Total: /, "", v); v += 0; t += v; if (v > m) m = v}
  END {printf "safepoints=%d pause_total_ms=%.0f pause_max_ms=%.1f", n, t / 1e6, m / 1e6}' "$OUT/gc.log")

echo "info rate run: target ${RATE} achieved ${ACHIEVED:-?} req/s, p99 ${P99:-?} ms, errors ${LOAD_ERRORS} ($OUT/load)"
echo "info $CLIENT_LINE"
echo "info heap_after_gc_mb start=$HEAP_START end=$HEAP_END; server $PAUSES; final $(stats)"
echo "info server log $OUT/server.log, samples $OUT/samples.txt, GC log $OUT/gc.log, native memory $OUT/native-memory-diff.txt"
echo "info load generator, clients and server shared the machine's $CORES cores ($PINNING); load $(loadavg)"
STAMP=$(date -u +%Y-%m-%dT%H:%M:%SZ)
[ -s "$RESULTS" ] || echo "timestamp,commit,cores,jvm,gc,options,minutes,rate,achieved_rps,p99_ms,rss_start_mb,rss_end_mb,rss_growth_pct,heap_start_mb,heap_end_mb,direct_end_mb,leaks,load_errors,client_errors,loadavg" >"$RESULTS"
echo "$STAMP,$COMMIT,$CORES shared: $PINNING,$JVM_NAME,${GC#-XX:+Use},-Xmx${HEAP_MB}m paranoid conns=$CONNECTIONS clients=${CLIENTS[*]} stream_kb=$STREAM_KB,$SOAK_MINUTES,$RATE,${ACHIEVED:-},${P99:-},$RSS_START,$RSS_END,$GROWTH,$HEAP_START,$HEAP_END,$DIRECT_END,$LEAKS,$LOAD_ERRORS,$CLIENT_ERRORS,$(cut -d' ' -f1 /proc/loadavg)" >>"$RESULTS"
echo "soak minutes=$SOAK_MINUTES rate=$RATE rss_start_mb=$RSS_START rss_end_mb=$RSS_END rss_growth_pct=$GROWTH direct_end_mb=$DIRECT_END leaks=$LEAKS errors=$ERRORS"
