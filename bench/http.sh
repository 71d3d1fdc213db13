#!/usr/bin/env bash
# bench/http.sh: TechEmpower-style plaintext (16-deep pipelining) and JSON against herald.http and against a
# raw Netty 4.2 server (the ceiling), one after the other in one run, same JVM flags, same wrk, server pinned to
# one core and wrk to the other. Appends one row per measured run to bench/results/http.csv and prints, last:
#   plaintext herald_rps=<n> netty_rps=<n> ratio=<herald/netty>
#   json herald_rps=<n> netty_rps=<n> ratio=<herald/netty>
#   json_vthreads herald_rps=<n> netty_rps=<n> ratio=<herald/netty>
# then tail latency (bench/lib/tail.sh, unless TAIL=0): raw Netty's non-pipelined max, `herald-load rate` at half
# of it against fresh servers (raw Netty, herald on the event loop and on virtual threads, herald under each GC of
# TAIL_GCS, and raw Netty under each of them too), what the tail is made of (pauses, GC, JIT, the generator) from their VM logs, rows appended to
# bench/results/http-tail.csv, and last:
#   tail_gc gc=<name> p9999_ms=<x> p999_ms=<x> p99_ms=<x> max_ms=<x> server_pause_max_ms=<x> netty_p9999_ms=<x>
#           netty_p999_ms=<x> netty_p99_ms=<x>   (one per collector; netty_*: raw Netty under the same collector)
#   tail rate=<n> p99_ms=<x> p999_ms=<x> p9999_ms=<x> max_ms=<x> netty_p999_ms=<x> netty_p9999_ms=<x>
# Environment (defaults in brackets): DURATION [5] seconds per measured run, WARMUP [5] seconds per warm-up run,
# ROUNDS [3], CONNECTIONS [256], PIPELINE [16], IO_THREADS [1] event loops per server, SERVER_CPU [0],
# WRK_CPU [1], RESULTS [bench/results/http.csv], PROFILE [""] (comma list of async-profiler
# events, e.g. cpu,alloc: one extra profiled run per server and test after the measured rounds), PROFILE_DIR
# [/tmp/herald-http-profiles], SERVERS ["netty herald herald_vt"] (a subset, or more:
# netty_validating = the ceiling with Netty's header validation on, herald_wp = herald's worker pool,
# herald_router = herald with herald.http.router/router), EXTRA_CP
# [""] (prepended to the servers' classpath), NICE [""] (a nice level for servers and wrk, e.g. -10 on a
# machine busy with other work), SOURCE [head] (head: the committed http sources; worktree: the files on disk),
# BASE [""] (a git revision: adds the servers herald_base and herald_vt_base, built from that revision's http
# sources, for an A/B in one run; add them to SERVERS), TAIL [1], TAIL_SECONDS [60], TAIL_WARMUP [20],
# TAIL_CONNECTIONS [64], TAIL_SHARE [0.5], TAIL_RATE [measured], TAIL_GCS ["parallel g1 zgc"],
# TAIL_RESULTS [bench/results/http-tail.csv], TAIL_SERVER_FLAGS [""], TAIL_GEN_FLAGS [-Xmx1g -Xms1g -XX:+AlwaysPreTouch -XX:+UseParallelGC],
# TAIL_FLAGSETS [""] (a JVM-flag A/B of the tail instead of its server rounds, or of two generator builds:
# bench/lib/tail_flags.sh), TAIL_GEN_CMD [bin/herald-load], TAIL_JITTER [20] (seconds of MachineJitter on both cores
# before the tail runs: the machine's own stalls; 0: none),
# RESTART [0] (1: fresh servers before every round), TESTS ["plaintext json"]; ROUNDS=0 runs the tail part only.
# Shared setup: bench/lib/common.sh.
# See bench/README.md for the methodology.
set -euo pipefail

BENCH_NAME=http
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/tail.sh"
source "$(dirname "$0")/lib/tail_flags.sh"
bench_session "$0" "$@"

DURATION=${DURATION:-5}
WARMUP=${WARMUP:-5}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-256}
PIPELINE=${PIPELINE:-16}
IO_THREADS=${IO_THREADS:-1}
SERVER_CPU=${SERVER_CPU:-0}
WRK_CPU=${WRK_CPU:-1}
RESULTS=${RESULTS:-$ROOT/bench/results/http.csv}
PROFILE=${PROFILE:-}
PROFILE_DIR=${PROFILE_DIR:-/tmp/herald-http-profiles}
NICE=${NICE:-}
SOURCE=${SOURCE:-head}
TAIL=${TAIL:-1}
RESTART=${RESTART:-0}
read -r -a SERVER_LIST <<<"${SERVERS:-netty herald herald_vt}"
read -r -a TESTS <<<"${TESTS:-plaintext json}"

bench_nice
bench_workdir herald-bench-http

# --- tools -------------------------------------------------------------------------------------------------
bench_jdk
bench_wrk
bench_pinning

# --- build -------------------------------------------------------------------------------------------------
# HEAD's committed http sources (SOURCE=head, the default) or the files on disk (SOURCE=worktree), compiled with
# javac into a directory of our own (bench/lib/common.sh)
bench_build "$SOURCE"
CP="${EXTRA_CP:+$EXTRA_CP:}$CP"
# BASE=<rev>: the same servers built from another revision (herald_base, herald_vt_base), for an A/B in one run
BASE=${BASE:-}
if [ -n "$BASE" ]; then
  BASE_REV=$(git rev-parse --short "$BASE") || die "unknown BASE revision $BASE"
  mkdir -p "$WORK/base"
  # a revision from before the json module (c55678c) has the JSON codec in http/src
  git archive "$BASE_REV" http/src | tar -x -C "$WORK/base"
  git archive "$BASE_REV" json/src 2>/dev/null | tar -x -C "$WORK/base" 2>/dev/null || true
  find "$WORK/base/http/src/main/java" "$WORK/base/http/src/test/java/herald/http/bench" -name '*.java' >"$WORK/base-sources.txt"
  [ -d "$WORK/base/json/src/main/java" ] && find "$WORK/base/json/src/main/java" -name '*.java' >>"$WORK/base-sources.txt"
  "$JAVA_HOME/bin/javac" --release 21 -nowarn -d "$WORK/base-classes" -cp "$(cat "$WORK/deps.txt")" \
    @"$WORK/base-sources.txt" || die "javac failed for BASE=$BASE"
  B="$WORK/base/http/src"
  BASE_CP="$B/test/clojure:$B/main/clojure:$WORK/base/json/src/main/clojure:$B/main/resources:$WORK/base-classes:$(cat "$WORK/deps.txt")"
  log "BASE: herald_base and herald_vt_base run http/src of $BASE_REV"
fi

bench_jvm_flags -XX:+UseParallelGC
if [ -n "$PROFILE" ]; then
  JVM_FLAGS+=(-XX:+EnableDynamicAgentLoading -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints)
fi
OPTIONS="${JVM_FLAGS[*]}; io_threads=$IO_THREADS; conns=$CONNECTIONS; depth=$PIPELINE; duration=${DURATION}s; $PINNING"

bench_pipeline_lua

# --- servers -----------------------------------------------------------------------------------------------
server_main() {
  case $1 in
    netty) echo "herald.http.bench.RawNettyServer --port 0 --threads $IO_THREADS" ;;
    netty_validating) echo "herald.http.bench.RawNettyServer --port 0 --threads $IO_THREADS --validate-headers true" ;;
    herald_wp) echo "clojure.main -m herald.http.bench-app --port 0 --mode worker-pool --io-threads $IO_THREADS" ;;
    herald_router) echo "clojure.main -m herald.http.bench-app --port 0 --mode event-loop --io-threads $IO_THREADS --router true" ;;
    herald) echo "clojure.main -m herald.http.bench-app --port 0 --mode event-loop --io-threads $IO_THREADS" ;;
    herald_vt) echo "clojure.main -m herald.http.bench-app --port 0 --mode virtual-threads --io-threads $IO_THREADS" ;;
    herald_base) [ -n "$BASE" ] || die "herald_base needs BASE=<rev>"; server_main herald ;;
    herald_vt_base) [ -n "$BASE" ] || die "herald_vt_base needs BASE=<rev>"; server_main herald_vt ;;
    tail_*) server_main "${TAIL_BASE[$1]}" ;;  # the tail runs' fresh servers (bench/lib/tail.sh)
    *) die "unknown server $1 (netty, netty_validating, herald, herald_vt, herald_wp, herald_router, herald_base, herald_vt_base)" ;;
  esac
}

server_cp() { case $1 in *_base) echo "$BASE_CP" ;; *) echo "$CP" ;; esac; }

record() {
  local s=$1 t=$2 stamp commit=$COMMIT
  case $s in *_base) commit=$BASE_REV ;; esac
  stamp=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  [ -s "$RESULTS" ] || echo "timestamp,commit,cores,jvm,gc,options,server,test,rps,cpu_us_per_req,requests,non2xx,socket_errors,p50_ms,p99_ms,server_core_other_pct" >"$RESULTS"
  echo "$stamp,$commit,$CORES shared: $PINNING,$JVM_NAME,ParallelGC,$OPTIONS,$s,$t,$W_RPS,$W_CPU,$W_REQUESTS,$W_NON2XX,$W_ERRORS,$W_P50,$W_P99,$W_OTHER" >>"$RESULTS"
  keep_run "$s" "$t"
}

# --- profiling (PROFILE=cpu,alloc) -------------------------------------------------------------------------
profiler_lib() {
  local jar="$WORK/async-profiler.jar"
  local get=(dependency:copy -Dartifact=tools.profiler:async-profiler:4.2 -DoutputDirectory="$WORK" -Dmdep.stripVersion=true)
  mvn -o -q -B "${get[@]}" >/dev/null 2>&1 || mvn -q -B "${get[@]}" >/dev/null || die "cannot fetch async-profiler"
  (cd "$WORK" && unzip -qo "$jar" 'linux-x64/libasyncProfiler.so')
  echo "$WORK/linux-x64/libasyncProfiler.so"
}

# agent_cmd PID LIB ARGS: loads async-profiler into PID with ARGS (quoted for jcmd, which splits on '=')
agent_cmd() {
  local out
  out=$(jcmd "$1" JVMTI.agent_load "$2" "\"$3\"" 2>&1)
  grep -q 'return code: 0' <<<"$out" || die "async-profiler '$3' failed in pid $1: $out"
}

# summarise FILE.collapsed REQUESTS: the top leaf frames (self) and the total per request
summarise() {
  awk -v n="$2" '{t += $NF} END {printf "total %.0f, per request %.2f (cpu: ns; alloc: bytes)\n", t, (n > 0 ? t / n : 0)}' "$1"
  awk '{c = $NF; $NF = ""; k = split($0, f, ";"); leaf = f[k]; sub(/ +$/, "", leaf); self[leaf] += c; tot += c}
    END {for (l in self) printf "%6.2f%% %s\n", 100 * self[l] / tot, l}' "$1" | sort -k1,1 -g -r | awk 'NR <= 40' 
}

profile_runs() {
  local lib s t ev base
  lib=$(profiler_lib)
  mkdir -p "$PROFILE_DIR"
  for ev in ${PROFILE//,/ }; do
    for s in "${SERVER_LIST[@]}"; do
      for t in "${TESTS[@]}"; do
        base="$PROFILE_DIR/$s-$t-$ev"
        agent_cmd "${PID[$s]}" "$lib" "start,event=$ev$([ "$ev" = cpu ] && echo ,interval=1ms)"
        run_wrk "$s" "$t" "$DURATION"
        agent_cmd "${PID[$s]}" "$lib" "dump,collapsed,total,file=$base.collapsed"
        agent_cmd "${PID[$s]}" "$lib" "stop,flamegraph,total,title=$s-$t-$ev,file=$base.html"
        echo "$W_REQUESTS" >"$base.requests"
        summarise "$base.collapsed" "$W_REQUESTS" >"$base.top.txt"
        log "profile $ev $s $t: $W_RPS req/s (profiled), $base.{html,collapsed,top.txt}"
      done
    done
  done
}

for s in "${SERVER_LIST[@]}"; do server_main "$s" >/dev/null; done  # unknown names fail here, before any work

# --- the run -----------------------------------------------------------------------------------------------
log "JDK $JVM_NAME, $CORES cores ($PINNING), ${ROUNDS} rounds x ${DURATION}s, warm-up ${WARMUP}s, commit $COMMIT"
if [ "$ROUNDS" -eq 0 ] && [ -z "$PROFILE" ]; then  # the tail part only
  [ "$TAIL" = 1 ] || die "ROUNDS=0 with TAIL=0 leaves nothing to run"
  tail_runs; tail_summary; exit 0
fi
# warm_up: (re)starts every server and warms it up on every test
warm_up() {
  for s in "${SERVER_LIST[@]}"; do
    [ -n "${PID[$s]:-}" ] && stop_server "$s"
    start_server "$s"
    for t in "${TESTS[@]}"; do run_wrk "$s" "$t" "$WARMUP"; done
    log "$s warmed up"
  done
}
# RESTART=1: fresh server processes before every round, so what one JVM's JIT made of the code (which lasts as
# long as the process) spreads over the rounds instead of biasing all of them; round R's order as run_rounds'
restarted_rounds() {
  local r s t order
  for r in $(seq 1 "$ROUNDS"); do
    warm_up
    order=("${SERVER_LIST[@]}")
    if [ $((r % 2)) -eq 0 ]; then order=(); for s in "${SERVER_LIST[@]}"; do order=("$s" "${order[@]}"); done; fi
    for t in "${TESTS[@]}"; do
      for s in "${order[@]}"; do
        run_wrk "$s" "$t" "$DURATION"; record "$s" "$t"; echo "$W_RPS" >"$WORK/round.$r.$s.$t"
      done
    done
  done
}
if [ "$RESTART" = 1 ]; then restarted_rounds; else warm_up; run_rounds "${SERVER_LIST[*]}" "${TESTS[*]}"; fi
[ -n "$PROFILE" ] && profile_runs
[ "$TAIL" = 1 ] && tail_runs

for s in "${SERVER_LIST[@]}"; do
  for t in "${TESTS[@]}"; do
    echo "info $s $t rps=$(median "$WORK/rps.$s.$t") cpu_us_per_req=$(median "$WORK/cpu.$s.$t" %.2f) (medians of $ROUNDS)"
  done
done
for t in "${TESTS[@]}"; do
  for s in "${SERVER_LIST[@]}"; do
    [ "$s" = netty ] && continue
    echo "info $t $s/netty rps_ratio=$(ratio "$(median "$WORK/rps.$s.$t")" "$(median "$WORK/rps.netty.$t")")" \
      "cpu_ratio(netty/$s)=$(ratio "$(median "$WORK/cpu.netty.$t" %.2f)" "$(median "$WORK/cpu.$s.$t" %.2f)")"
  done
done
for t in "${TESTS[@]}"; do
  per_round=""
  for r in $(seq 1 "$ROUNDS"); do
    per_round="$per_round $(ratio "$(cat "$WORK/round.$r.herald.$t" 2>/dev/null)" "$(cat "$WORK/round.$r.netty.$t" 2>/dev/null)")"
    [ -n "$BASE" ] && base_round="${base_round:-} $(ratio "$(cat "$WORK/round.$r.herald.$t" 2>/dev/null)" "$(cat "$WORK/round.$r.herald_base.$t" 2>/dev/null)")"
  done
  echo "info $t per-round ratios (herald/netty):$per_round"
  [ -n "$BASE" ] && { echo "info $t per-round ratios (herald/herald_base):$base_round; cpu_us_per_req herald=$(median "$WORK/cpu.herald.$t" %.2f) herald_base=$(median "$WORK/cpu.herald_base.$t" %.2f)"; base_round=""; }
  cn=$(median "$WORK/cpu.netty.$t" %.2f); ch=$(median "$WORK/cpu.herald.$t" %.2f); cv=$(median "$WORK/cpu.herald_vt.$t" %.2f)
  echo "info $t cpu_us_per_req netty=$cn herald=$ch herald_vt=$cv cpu_ratio(netty/herald)=$(ratio "$cn" "$ch") cpu_ratio(netty/herald_vt)=$(ratio "$cn" "$cv")"
done
NP=$(median "$WORK/rps.netty.plaintext"); NJ=$(median "$WORK/rps.netty.json")
HP=$(median "$WORK/rps.herald.plaintext"); HJ=$(median "$WORK/rps.herald.json")
VP=$(median "$WORK/rps.herald_vt.plaintext"); VJ=$(median "$WORK/rps.herald_vt.json")
echo "info results appended to ${RESULTS#"$ROOT"/}; load generator (wrk) and server shared the machine's $CORES cores ($PINNING)"
echo "info plaintext_vthreads herald_rps=$VP netty_rps=$NP ratio=$(ratio "$VP" "$NP")"
echo "plaintext herald_rps=$HP netty_rps=$NP ratio=$(ratio "$HP" "$NP")"
echo "json herald_rps=$HJ netty_rps=$NJ ratio=$(ratio "$HJ" "$NJ")"
echo "json_vthreads herald_rps=$VJ netty_rps=$NJ ratio=$(ratio "$VJ" "$NJ")"
if [ "$TAIL" = 1 ]; then tail_summary; fi
