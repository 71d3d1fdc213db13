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

# NICE: run in a session of our own whose autogroup gets the nice level (see bench/http.sh for why)
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
NICE=${NICE:-}
JETTY_TUNED_THREADS=${JETTY_TUNED_THREADS:-8}
RESULTS=${RESULTS:-$ROOT/bench/results/peers.csv}
read -r -a SERVER_LIST <<<"${SERVERS:-netty herald herald_vt jetty jetty_tuned}"
read -r -a TEST_LIST <<<"${TESTS:-plaintext plaintext_np json}"
# Debian's jars of ring-jetty-adapter 1.8.2 and what it needs beyond the http module's test classpath
# (which already has Clojure, ring-core 1.8.2 and ring-codec; its servlet-api 2.5 is replaced by 4.0.1)
DEBIAN_PACKAGES=(libring-jetty-adapter-clojure libring-servlet-clojure libjetty9-java libservlet-api-java wrk)
JETTY_JARS=(ring-jetty-adapter ring-servlet jetty9-server jetty9-http jetty9-io jetty9-util servlet-api-4.0.1)

log() { echo "bench/peers: $*" >&2; }
die() { log "$*"; exit 1; }
for t in "${TEST_LIST[@]}"; do
  case $t in plaintext|plaintext_np|json) ;; *) die "unknown test $t (plaintext, plaintext_np, json)" ;; esac
done
if [ -n "$NICE" ] && [ -w /proc/self/autogroup ]; then
  echo "$NICE" >/proc/self/autogroup 2>/dev/null || log "cannot set the autogroup's nice level to $NICE"
fi

WORK=$(mktemp -d /tmp/herald-bench-peers.XXXXXX)
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

JAVA_HOME=$("$ROOT/build/find-jdk.sh") || die "no JDK >= 21"
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
JAVA_MAJOR=$("$JAVA_HOME/bin/java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
if [ "$JAVA_MAJOR" -ge 23 ]; then export MAVEN_OPTS=--sun-misc-unsafe-memory-access=allow; fi
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

# --- build: HEAD's http sources, compiled into a directory of our own (as bench/http.sh does) ----------------
cd "$ROOT"
mvn -o -q -B -pl http dependency:build-classpath -Dmdep.outputFile="$WORK/deps.txt" -Dmdep.includeScope=test \
  >/dev/null || mvn -q -B -pl http dependency:build-classpath -Dmdep.outputFile="$WORK/deps.txt" \
  -Dmdep.includeScope=test >/dev/null || die "cannot resolve the http module's test classpath"
# in a git checkout: the committed sources of HEAD; elsewhere (an exported copy of a revision) the files on
# disk, with COMMIT naming the revision they came from
if git rev-parse --verify -q HEAD >/dev/null 2>&1; then
  mkdir -p "$WORK/src"
  git archive HEAD http/src | tar -x -C "$WORK/src"
  SRC="$WORK/src/http/src"
  COMMIT=$(git rev-parse --short HEAD)
else
  SRC="$ROOT/http/src"
  COMMIT=${COMMIT:-unknown}
fi
log "compiling http/src/main/java and the raw Netty server of $COMMIT"
find "$SRC/main/java" "$SRC/test/java/herald/http/bench" -name '*.java' >"$WORK/sources.txt"
"$JAVA_HOME/bin/javac" --release 21 -nowarn -d "$WORK/classes" -cp "$(cat "$WORK/deps.txt")" @"$WORK/sources.txt" \
  2>"$WORK/javac.log" || { cat "$WORK/javac.log" >&2; die "javac failed"; }
BASE_CP="$SRC/test/clojure:$SRC/main/clojure:$SRC/main/resources:$WORK/classes"
CP="$BASE_CP:$(cat "$WORK/deps.txt")"
# the Jetty servers: the same classpath (same Clojure, same handler) plus Debian's Ring Jetty adapter and Jetty 9,
# without the test classpath's servlet-api 2.5 (Jetty 9.4 needs the Servlet 3.1+ API)
DEPS_NO_SERVLET=$(tr ':' '\n' <"$WORK/deps.txt" | grep -v '/servlet-api-[^/]*\.jar$' | paste -sd: -)
JCP="$ROOT/bench/peers:$BASE_CP:$JETTY_CP$DEPS_NO_SERVLET"

JVM_FLAGS=(-Xmx1g -Xms1g -XX:+UseParallelGC)
[ "$JAVA_MAJOR" -ge 22 ] && JVM_FLAGS+=(--enable-native-access=ALL-UNNAMED)
[ "$JAVA_MAJOR" -ge 23 ] && JVM_FLAGS+=(--sun-misc-unsafe-memory-access=allow)
JVM_NAME=$("$JAVA_HOME/bin/java" -version 2>&1 | sed -n 's/.*Runtime Environment \([^ ]*\).*/\1/p' | head -1)
OPTIONS="${JVM_FLAGS[*]}; io_threads=$IO_THREADS; conns=$CONNECTIONS; depth=$PIPELINE; duration=${DURATION}s; jetty=${JETTY_VERSION:-9.4}; $PINNING"

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
    herald) echo "clojure.main -m herald.http.bench-app --port 0 --mode event-loop --io-threads $IO_THREADS" ;;
    herald_vt) echo "clojure.main -m herald.http.bench-app --port 0 --mode virtual-threads --io-threads $IO_THREADS" ;;
    jetty) echo "clojure.main -m herald.bench.jetty-peer --port 0" ;;
    jetty_tuned) echo "clojure.main -m herald.bench.jetty-peer --port 0 --min-threads $JETTY_TUNED_THREADS --max-threads $JETTY_TUNED_THREADS" ;;
    *) die "unknown server $1 (netty, herald, herald_vt, jetty, jetty_tuned)" ;;
  esac
}

start_server() {
  local s=$1 out="$WORK/$1.log" i cp="$CP"
  case $s in jetty*) cp="$JCP" ;; esac
  # shellcheck disable=SC2046
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

# Fails unless both routes answer 200 with the expected bodies; keeps each server's response heads.
check_responses() {
  local url="http://127.0.0.1:${PORT[$1]}" body
  body=$(curl -sf "$url/plaintext") || die "$1: GET /plaintext failed"
  [ "$body" = "Hello, World!" ] || die "$1: /plaintext answered '$body'"
  body=$(curl -sf "$url/json") || die "$1: GET /json failed"
  [ "$body" = '{"message":"Hello, World!"}' ] || die "$1: /json answered '$body'"
  for r in plaintext json; do
    curl -s -o /dev/null -D - "$url/$r" | tr -d '\r' | grep -v -i -E '^(date:|$)' | paste -sd'|' - \
      | sed "s#^#$r: #" >>"$WORK/heads.$1"
  done
}

cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
core_ticks() {
  local c=cpu; [ "$PINNING" != unpinned ] && c=cpu$SERVER_CPU
  awk -v c="$c" '$1 == c {t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t; exit}' /proc/stat
}
to_ms() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n += 0; else if (v ~ /s$/) n *= 1000; printf "%.3f", n }'; }

# run_wrk SERVER TEST SECONDS: runs wrk, leaves the parsed figures in the W_* variables.
run_wrk() {
  local s=$1 t=$2 secs=$3 url="http://127.0.0.1:${PORT[$1]}" out="$WORK/wrk.out" args
  case $t in
    plaintext) args=(-s "$WORK/pipeline.lua" "$url/plaintext" -- "$PIPELINE") ;;
    plaintext_np) args=(--latency "$url/plaintext") ;;
    json) args=(--latency "$url/json") ;;
    *) die "unknown test $t (plaintext, plaintext_np, json)" ;;
  esac
  local c0 s0 c1 s1 b0 t0 b1 t1
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
  if [ "$t" != plaintext ]; then
    W_P50=$(to_ms "$(awk '$1 == "50%" {print $2; exit}' "$out")")
    W_P99=$(to_ms "$(awk '$1 == "99%" {print $2; exit}' "$out")")
  fi
  W_CPU=$(awk -v d=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" -v n="${W_REQUESTS:-0}" \
    'BEGIN { if (n > 0) printf "%.2f", d / hz * 1e6 / n; else print "" }')
  read -r b0 t0 <<<"$s0"; read -r b1 t1 <<<"$s1"
  W_OTHER=$(awk -v b=$((b1 - b0 - c1 + c0)) -v t=$((t1 - t0)) 'BEGIN { if (t > 0 && b > 0) printf "%.1f", 100 * b / t; else print 0 }')
  [ -n "$W_RPS" ] || { cat "$out" >&2; die "cannot parse wrk's output for $s $t"; }
}

record() {
  local s=$1 t=$2 stamp
  stamp=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  [ -s "$RESULTS" ] || echo "timestamp,commit,cores,jvm,gc,options,server,test,rps,cpu_us_per_req,requests,non2xx,socket_errors,p50_ms,p99_ms,server_core_other_pct,loadavg" >"$RESULTS"
  echo "$stamp,$COMMIT,$CORES shared: $PINNING,$JVM_NAME,ParallelGC,$OPTIONS,$s,$t,$W_RPS,$W_CPU,$W_REQUESTS,$W_NON2XX,$W_ERRORS,$W_P50,$W_P99,$W_OTHER,$(cut -d' ' -f1 /proc/loadavg)" >>"$RESULTS"
  if [ "$W_NON2XX" -eq 0 ]; then
    echo "$W_RPS" >>"$WORK/rps.$s.$t"; echo "$W_CPU" >>"$WORK/cpu.$s.$t"
  else
    log "$s $t: $W_NON2XX non-2xx responses, run left out of the medians"
  fi
  log "$s $t: ${W_RPS} req/s, ${W_CPU} us CPU/req, p50=${W_P50:--} p99=${W_P99:--} ms, errors=$W_ERRORS, other load on the server core ${W_OTHER}%"
}

median() {
  [ -s "$1" ] || { echo 0; return; }
  sort -g "$1" | awk -v f="${2:-%d}" '{v[NR] = $1} END {printf f "\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
ratio() { awk -v h="$1" -v n="$2" 'BEGIN { if (n > 0) printf "%.2f", h / n; else print "nan" }'; }

for s in "${SERVER_LIST[@]}"; do server_main "$s" >/dev/null; done  # unknown names fail here, before any work

# --- the run: servers started one at a time (warm-up), then ROUNDS rounds, the order reversed every other round
log "JDK $JVM_NAME, Jetty ${JETTY_VERSION:-?}, $CORES cores ($PINNING), ${ROUNDS} rounds x ${DURATION}s, warm-up ${WARMUP}s, commit $COMMIT, load $(cut -d' ' -f1-3 /proc/loadavg)"
for s in "${SERVER_LIST[@]}"; do
  start_server "$s"
  for t in "${TEST_LIST[@]}"; do run_wrk "$s" "$t" "$WARMUP"; done
  log "$s warmed up"
done
for r in $(seq 1 "$ROUNDS"); do
  order=("${SERVER_LIST[@]}")
  if [ $((r % 2)) -eq 0 ]; then order=(); for s in "${SERVER_LIST[@]}"; do order=("$s" "${order[@]}"); done; fi
  for t in "${TEST_LIST[@]}"; do
    for s in "${order[@]}"; do run_wrk "$s" "$t" "$DURATION"; record "$s" "$t"; done
  done
done

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
