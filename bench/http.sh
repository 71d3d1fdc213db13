#!/usr/bin/env bash
# bench/http.sh: TechEmpower-style plaintext (16-deep pipelining) and JSON against herald.http and against a
# raw Netty 4.2 server (the ceiling), one after the other in one run, same JVM flags, same wrk, server pinned to
# one core and wrk to the other. Appends one row per measured run to bench/results/http.csv and prints, last:
#   plaintext herald_rps=<n> netty_rps=<n> ratio=<herald/netty>
#   json herald_rps=<n> netty_rps=<n> ratio=<herald/netty>
#   json_vthreads herald_rps=<n> netty_rps=<n> ratio=<herald/netty>
# Environment (defaults in brackets): DURATION [5] seconds per measured run, WARMUP [5] seconds per warm-up run,
# ROUNDS [3], CONNECTIONS [256], PIPELINE [16], IO_THREADS [1] event loops per server, SERVER_CPU [0],
# WRK_CPU [1], RESULTS [bench/results/http.csv], PROFILE [""] (comma list of async-profiler
# events, e.g. cpu,alloc: one extra profiled run per server and test after the measured rounds), PROFILE_DIR
# [/tmp/herald-http-profiles], SERVERS ["netty herald herald_vt"] (a subset, or more:
# netty_validating = the ceiling with Netty's header validation on, herald_wp = herald's worker pool,
# herald_router = herald with herald.http/router), EXTRA_CP
# [""] (prepended to the servers' classpath), NICE [""] (a nice level for servers and wrk, e.g. -10 on a
# machine busy with other work), SOURCE [head] (head: the committed http sources; worktree: the files on disk),
# BASE [""] (a git revision: adds the servers herald_base and herald_vt_base, built from that revision's http
# sources, for an A/B in one run; add them to SERVERS).
# See bench/README.md for the methodology.
set -euo pipefail

# With NICE, run in a session of our own: under the kernel's autogroup scheduling, nice(1) only weighs processes
# of one session against each other, so the session's autogroup gets the nice level too (set below).
# Ctrl-C and TERM reach this parent, which passes them on to the new session (whose trap stops the servers).
if [ -n "${NICE:-}" ] && [ -z "${HERALD_BENCH_SESSION:-}" ] && command -v setsid >/dev/null; then
  export HERALD_BENCH_SESSION=1
  setsid -w "$0" "$@" &
  child=$!
  trap 'kill -TERM -- "-$child" 2>/dev/null || kill -TERM "$child" 2>/dev/null' INT TERM
  rc=0
  wait "$child" || rc=$?
  while kill -0 "$child" 2>/dev/null; do wait "$child" || rc=$?; done
  exit "$rc"
fi

ROOT=$(cd "$(dirname "$0")/.." && pwd)
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
read -r -a SERVER_LIST <<<"${SERVERS:-netty herald herald_vt}"
TESTS=(plaintext json)

log() { echo "bench/http: $*" >&2; }
die() { log "$*"; exit 1; }
if [ -n "$NICE" ] && [ -w /proc/self/autogroup ]; then
  echo "$NICE" >/proc/self/autogroup 2>/dev/null || log "cannot set the autogroup's nice level to $NICE"
fi

WORK=$(mktemp -d /tmp/herald-bench-http.XXXXXX)
declare -A PID PORT
cleanup() {
  local rc=$?
  for s in "${!PID[@]}"; do kill "${PID[$s]}" 2>/dev/null || true; done
  for s in "${!PID[@]}"; do wait "${PID[$s]}" 2>/dev/null || true; done
  if [ $rc -eq 0 ]; then rm -rf "$WORK"; else log "failed (exit $rc); logs kept in $WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- tools -------------------------------------------------------------------------------------------------
JAVA_HOME=$("$ROOT/build/find-jdk.sh") || die "no JDK >= 21"
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
JAVA_MAJOR=$("$JAVA_HOME/bin/java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
if [ "$JAVA_MAJOR" -ge 23 ]; then export MAVEN_OPTS=--sun-misc-unsafe-memory-access=allow; fi
if ! command -v wrk >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    log "installing wrk"; apt-get install -y -qq wrk >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq wrk; }
  fi
  command -v wrk >/dev/null || die "wrk is missing: apt-get install wrk"
fi
CORES=$(nproc)
if [ "$CORES" -ge 2 ] && command -v taskset >/dev/null; then
  ON_SERVER=(taskset -c "$SERVER_CPU"); ON_WRK=(taskset -c "$WRK_CPU")
  PINNING="server@cpu$SERVER_CPU wrk@cpu$WRK_CPU"
else
  ON_SERVER=(); ON_WRK=(); PINNING="unpinned"
fi
if [ -n "$NICE" ]; then
  ON_SERVER=(nice -n "$NICE" "${ON_SERVER[@]}"); ON_WRK=(nice -n "$NICE" "${ON_WRK[@]}"); PINNING="$PINNING nice=$NICE"
fi

# --- build -------------------------------------------------------------------------------------------------
# javac into a directory of our own rather than mvn test-compile into http/target: other builds running meanwhile
# (make test, an IDE) rewrite http/target/classes and would change the classes under a running server.
cd "$ROOT"
mvn -o -q -B -pl http dependency:build-classpath -Dmdep.outputFile="$WORK/deps.txt" -Dmdep.includeScope=test \
  >/dev/null || mvn -q -B -pl http dependency:build-classpath -Dmdep.outputFile="$WORK/deps.txt" \
  -Dmdep.includeScope=test >/dev/null || die "cannot resolve the http module's test classpath"
log "compiling http/src/main/java and the bench servers ($SOURCE)"
# SOURCE=head (the default) benchmarks the committed http sources, so that the commit column says exactly what
# ran and other people's edits in progress cannot break the build; SOURCE=worktree takes the files on disk.
if [ "$SOURCE" = head ] && git rev-parse --verify -q HEAD >/dev/null 2>&1; then
  mkdir -p "$WORK/src"
  git archive HEAD http/src | tar -x -C "$WORK/src"
  SRC="$WORK/src/http/src"
  COMMIT=$(git rev-parse --short HEAD)
else
  SRC="$ROOT/http/src"
  COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  [ -n "$(git status --porcelain -- http/src 2>/dev/null)" ] && COMMIT="$COMMIT+worktree"
fi
find "$SRC/main/java" "$SRC/test/java/herald/http/bench" -name '*.java' >"$WORK/sources.txt"
"$JAVA_HOME/bin/javac" --release 21 -nowarn -d "$WORK/classes" -cp "$(cat "$WORK/deps.txt")" @"$WORK/sources.txt" \
  || die "javac failed"
CP="${EXTRA_CP:+$EXTRA_CP:}$SRC/test/clojure:$SRC/main/clojure:$SRC/main/resources"
CP="$CP:$WORK/classes:$(cat "$WORK/deps.txt")"
# BASE=<rev>: the same servers built from another revision (herald_base, herald_vt_base), for an A/B in one run
BASE=${BASE:-}
if [ -n "$BASE" ]; then
  BASE_REV=$(git rev-parse --short "$BASE") || die "unknown BASE revision $BASE"
  mkdir -p "$WORK/base"
  git archive "$BASE_REV" http/src | tar -x -C "$WORK/base"
  find "$WORK/base/http/src/main/java" "$WORK/base/http/src/test/java/herald/http/bench" -name '*.java' >"$WORK/base-sources.txt"
  "$JAVA_HOME/bin/javac" --release 21 -nowarn -d "$WORK/base-classes" -cp "$(cat "$WORK/deps.txt")" \
    @"$WORK/base-sources.txt" || die "javac failed for BASE=$BASE"
  B="$WORK/base/http/src"
  BASE_CP="$B/test/clojure:$B/main/clojure:$B/main/resources:$WORK/base-classes:$(cat "$WORK/deps.txt")"
  log "BASE: herald_base and herald_vt_base run http/src of $BASE_REV"
fi

JVM_FLAGS=(-Xmx1g -Xms1g -XX:+UseParallelGC)
[ "$JAVA_MAJOR" -ge 22 ] && JVM_FLAGS+=(--enable-native-access=ALL-UNNAMED)
[ "$JAVA_MAJOR" -ge 23 ] && JVM_FLAGS+=(--sun-misc-unsafe-memory-access=allow)
if [ -n "$PROFILE" ]; then
  JVM_FLAGS+=(-XX:+EnableDynamicAgentLoading -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints)
fi
JVM_NAME=$("$JAVA_HOME/bin/java" -version 2>&1 | sed -n 's/.*Runtime Environment \([^ ]*\).*/\1/p' | head -1)
OPTIONS="${JVM_FLAGS[*]}; io_threads=$IO_THREADS; conns=$CONNECTIONS; depth=$PIPELINE; duration=${DURATION}s; $PINNING"

cat >"$WORK/pipeline.lua" <<'EOF'
init = function(args)
  local r = {}
  local depth = tonumber(args[1]) or 1
  for i = 1, depth do r[i] = wrk.format() end
  req = table.concat(r)
end
request = function() return req end
EOF

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
    *) die "unknown server $1 (netty, netty_validating, herald, herald_vt, herald_wp, herald_router, herald_base, herald_vt_base)" ;;
  esac
}

start_server() {
  local s=$1 out="$WORK/$1.log" i
  # shellcheck disable=SC2046
  local cp="$CP"; case $s in *_base) cp="$BASE_CP" ;; esac
  "${ON_SERVER[@]}" "$JAVA_HOME/bin/java" "${JVM_FLAGS[@]}" -cp "$cp" $(server_main "$s") >"$out" 2>&1 &
  PID[$s]=$!
  for i in $(seq 1 1200); do
    if grep -qs '^READY ' "$out"; then PORT[$s]=$(awk '/^READY /{print $2; exit}' "$out"); break; fi
    kill -0 "${PID[$s]}" 2>/dev/null || { cat "$out" >&2; die "$s exited before READY"; }
    sleep 0.1
  done
  [ -n "${PORT[$s]:-}" ] || { cat "$out" >&2; die "$s not READY after 120 s"; }
  check_responses "$s"
  log "$s ready on port ${PORT[$s]} (pid ${PID[$s]})"
}

# Fails unless both routes answer 200 with the expected bodies.
check_responses() {
  local url="http://127.0.0.1:${PORT[$1]}" body
  command -v curl >/dev/null || return 0
  body=$(curl -sf "$url/plaintext") || die "$1: GET /plaintext failed"
  [ "$body" = "Hello, World!" ] || die "$1: /plaintext answered '$body'"
  body=$(curl -sf "$url/json") || die "$1: GET /json failed"
  [ "$body" = '{"message":"Hello, World!"}' ] || die "$1: /json answered '$body'"
}

cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
# "busy total" ticks of the server's core (all cores when unpinned), from /proc/stat
core_ticks() {
  local c=cpu; [ "$PINNING" != unpinned ] && c=cpu$SERVER_CPU
  awk -v c="$c" '$1 == c {t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t; exit}' /proc/stat
}
to_ms() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n += 0; else if (v ~ /s$/) n *= 1000; printf "%.3f", n }'; }

# run_wrk SERVER TEST SECONDS: runs wrk, leaves the parsed figures in the W_* variables.
run_wrk() {
  local s=$1 t=$2 secs=$3 url="http://127.0.0.1:${PORT[$1]}" out="$WORK/wrk.out" args
  if [ "$t" = plaintext ]; then
    args=(-s "$WORK/pipeline.lua" "$url/plaintext" -- "$PIPELINE")
  else
    args=(--latency "$url/json")
  fi
  local c0 s0 c1 s1
  c0=$(cpu_ticks "${PID[$s]}"); s0=$(core_ticks)
  "${ON_WRK[@]}" wrk -t1 -c"$CONNECTIONS" -d"${secs}s" --timeout 5s \
    -H 'Accept: text/plain,text/html;q=0.9,application/xhtml+xml;q=0.9,application/xml;q=0.8,*/*;q=0.7' \
    "${args[@]}" >"$out" 2>&1 || { cat "$out" >&2; die "wrk failed against $s"; }
  c1=$(cpu_ticks "${PID[$s]}"); s1=$(core_ticks)
  W_REQUESTS=$(awk '/requests in/{print $1; exit}' "$out")
  W_RPS=$(awk '/^Requests\/sec:/{printf "%d", $2; exit}' "$out")
  W_NON2XX=$(awk '/Non-2xx or 3xx responses:/{print $NF; exit}' "$out"); W_NON2XX=${W_NON2XX:-0}
  W_ERRORS=$(awk '/Socket errors:/{gsub(",", ""); print $4 + $6 + $8 + $10; exit}' "$out"); W_ERRORS=${W_ERRORS:-0}
  W_P50=""; W_P99=""
  if [ "$t" = json ]; then
    W_P50=$(to_ms "$(awk '$1 == "50%" {print $2; exit}' "$out")")
    W_P99=$(to_ms "$(awk '$1 == "99%" {print $2; exit}' "$out")")
  fi
  W_CPU=$(awk -v d=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" -v n="${W_REQUESTS:-0}" \
    'BEGIN { if (n > 0) printf "%.2f", d / hz * 1e6 / n; else print "" }')
  local b0 t0 b1 t1
  read -r b0 t0 <<<"$s0"; read -r b1 t1 <<<"$s1"
  # share of the server core's time not charged to the server: other processes, interrupts (noise indicator)
  W_OTHER=$(awk -v b=$((b1 - b0 - c1 + c0)) -v t=$((t1 - t0)) 'BEGIN { if (t > 0 && b > 0) printf "%.1f", 100 * b / t; else print 0 }')
  [ -n "$W_RPS" ] || { cat "$out" >&2; die "cannot parse wrk's output for $s $t"; }
}

record() {
  local s=$1 t=$2 stamp commit=$COMMIT
  case $s in *_base) commit=$BASE_REV ;; esac
  stamp=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  [ -s "$RESULTS" ] || echo "timestamp,commit,cores,jvm,gc,options,server,test,rps,cpu_us_per_req,requests,non2xx,socket_errors,p50_ms,p99_ms,server_core_other_pct" >"$RESULTS"
  echo "$stamp,$commit,$CORES shared: $PINNING,$JVM_NAME,ParallelGC,$OPTIONS,$s,$t,$W_RPS,$W_CPU,$W_REQUESTS,$W_NON2XX,$W_ERRORS,$W_P50,$W_P99,$W_OTHER" >>"$RESULTS"
  if [ "$W_NON2XX" -eq 0 ]; then
    echo "$W_RPS" >>"$WORK/rps.$s.$t"; echo "$W_CPU" >>"$WORK/cpu.$s.$t"
  else
    log "$s $t: $W_NON2XX non-2xx responses, run left out of the medians"
  fi
  log "$s $t: ${W_RPS} req/s, ${W_CPU} us CPU/req, p50=${W_P50:--} p99=${W_P99:--} ms, errors=$W_ERRORS, other load on the server core ${W_OTHER}%"
}

# median FILE [FORMAT]: the median of the numbers in FILE (one a line), 0 when there are none
median() {
  [ -s "$1" ] || { echo 0; return; }
  sort -g "$1" | awk -v f="${2:-%d}" '{v[NR] = $1} END {printf f "\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
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
for s in "${SERVER_LIST[@]}"; do
  start_server "$s"
  for t in "${TESTS[@]}"; do run_wrk "$s" "$t" "$WARMUP"; done
  log "$s warmed up"
done
for r in $(seq 1 "$ROUNDS"); do
  order=("${SERVER_LIST[@]}")
  if [ $((r % 2)) -eq 0 ]; then order=(); for s in "${SERVER_LIST[@]}"; do order=("$s" "${order[@]}"); done; fi
  for t in "${TESTS[@]}"; do
    for s in "${order[@]}"; do
      run_wrk "$s" "$t" "$DURATION"
      record "$s" "$t"
      echo "$W_RPS" >"$WORK/round.$r.$s.$t"
    done
  done
done
[ -n "$PROFILE" ] && profile_runs

for s in "${SERVER_LIST[@]}"; do
  for t in "${TESTS[@]}"; do
    echo "info $s $t rps=$(median "$WORK/rps.$s.$t") cpu_us_per_req=$(median "$WORK/cpu.$s.$t" %.2f) (medians of $ROUNDS)"
  done
done
ratio() { awk -v h="$1" -v n="$2" 'BEGIN { if (n > 0) printf "%.2f", h / n; else print "nan" }'; }
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
  done
  echo "info $t per-round ratios (herald/netty):$per_round"
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
