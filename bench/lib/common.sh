# bench/lib/common.sh: the setup bench/http.sh, bench/peers.sh and bench/soak.sh share, sourced (not run):
# a session of their own under NICE, a work directory and the servers' cleanup, the JDK, CPU pinning, the http
# module's classpath and HEAD's http sources compiled with javac, server start (READY <port>) and checks, wrk runs
# with the server's CPU time per request, medians and ratios.
# The sourcing script sets BENCH_NAME (its log prefix) and may define server_main NAME (the java arguments of a
# server) and server_cp NAME (its classpath, default $CP) before calling start_server.

ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}

log() { echo "bench/${BENCH_NAME:-bench}: $*" >&2; }
die() { log "$*"; exit 1; }

# bench_session SCRIPT ARGS...: with NICE, runs SCRIPT again in a session of its own and exits with its status.
# Under the kernel's autogroup scheduling nice(1) only weighs processes of one session against each other, so the
# new session's autogroup gets the nice level too (bench_nice). Ctrl-C and TERM reach this parent, which passes
# them on to the new session (whose trap stops the servers).
bench_session() {
  if [ -n "${NICE:-}" ] && [ -z "${HERALD_BENCH_SESSION:-}" ] && command -v setsid >/dev/null; then
    export HERALD_BENCH_SESSION=1
    setsid -w "$@" &
    child=$!
    trap 'kill -TERM -- "-$child" 2>/dev/null || kill -TERM "$child" 2>/dev/null' INT TERM
    rc=0
    wait "$child" || rc=$?
    while kill -0 "$child" 2>/dev/null; do wait "$child" || rc=$?; done
    exit "$rc"
  fi
}

bench_nice() {
  if [ -n "${NICE:-}" ] && [ -w /proc/self/autogroup ]; then
    echo "$NICE" >/proc/self/autogroup 2>/dev/null || log "cannot set the autogroup's nice level to $NICE"
  fi
}

# bench_workdir PREFIX: WORK, the PID and PORT maps, and a trap that stops every server in PID on exit and keeps
# WORK (the logs) only when the script failed
bench_workdir() {
  WORK=$(mktemp -d "/tmp/$1.XXXXXX")
  declare -gA PID PORT
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
}
bench_cleanup() {
  local rc=$? s
  for s in "${!PID[@]}"; do kill "${PID[$s]}" 2>/dev/null || true; done
  for s in "${!PID[@]}"; do wait "${PID[$s]}" 2>/dev/null || true; done
  if [ $rc -eq 0 ] && [ -z "${KEEP_WORK:-}" ]; then rm -rf "$WORK"; else log "exit $rc; logs kept in $WORK"; fi
}

# bench_jdk: JAVA_HOME (build/find-jdk.sh), JAVA_MAJOR, JVM_NAME, MAVEN_OPTS
bench_jdk() {
  JAVA_HOME=$("$ROOT/build/find-jdk.sh") || die "no JDK >= 21"
  export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
  JAVA_MAJOR=$("$JAVA_HOME/bin/java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
  if [ "$JAVA_MAJOR" -ge 23 ]; then export MAVEN_OPTS=--sun-misc-unsafe-memory-access=allow; fi
  JVM_NAME=$("$JAVA_HOME/bin/java" -version 2>&1 | sed -n 's/.*Runtime Environment \([^ ]*\).*/\1/p' | head -1)
}

# bench_jvm_flags GC_FLAG: JVM_FLAGS, the flags every server gets (1 GiB heap, the GC, native access)
bench_jvm_flags() {
  JVM_FLAGS=(-Xmx1g -Xms1g "${1:--XX:+UseParallelGC}")
  [ "$JAVA_MAJOR" -ge 22 ] && JVM_FLAGS+=(--enable-native-access=ALL-UNNAMED)
  [ "$JAVA_MAJOR" -ge 23 ] && JVM_FLAGS+=(--sun-misc-unsafe-memory-access=allow)
  return 0
}

# bench_wrk: installs wrk as root when missing
bench_wrk() {
  if ! command -v wrk >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
      log "installing wrk"; apt-get install -y -qq wrk >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq wrk; }
    fi
    command -v wrk >/dev/null || die "wrk is missing: apt-get install wrk"
  fi
}

# bench_pinning: CORES, ON_SERVER and ON_WRK (taskset to SERVER_CPU and WRK_CPU, nice NICE), PINNING
bench_pinning() {
  CORES=$(nproc)
  if [ "$CORES" -ge 2 ] && command -v taskset >/dev/null; then
    ON_SERVER=(taskset -c "$SERVER_CPU"); ON_WRK=(taskset -c "$WRK_CPU")
    PINNING="server@cpu$SERVER_CPU wrk@cpu$WRK_CPU"
  else
    ON_SERVER=(); ON_WRK=(); PINNING="unpinned"
  fi
  if [ -n "${NICE:-}" ]; then
    ON_SERVER=(nice -n "$NICE" "${ON_SERVER[@]}"); ON_WRK=(nice -n "$NICE" "${ON_WRK[@]}"); PINNING="$PINNING nice=$NICE"
  fi
}

# bench_build SOURCE: the http module's test classpath (WORK/deps.txt) and its Java sources plus the bench servers
# compiled with javac into WORK/classes (not mvn into http/target, which other builds rewrite under a running
# server). SOURCE head: HEAD's committed http/src (what the commit column names; edits in progress cannot break
# the build), or the files on disk outside a git checkout (COMMIT names them); worktree: the files on disk.
# herald-http depends on the json module (herald-json): its sources are compiled with http's (JSON_SRC), and the
# dependency list is resolved in the reactor with json (`-am compile`: json/target/classes, never ahead of ours).
# Sets SRC, JSON_SRC, COMMIT and CP (sources, resources, classes, dependencies).
bench_build() {
  cd "$ROOT"
  local get=(-B -pl http -am compile dependency:build-classpath -Dmdep.outputFile="$WORK/deps.txt" -Dmdep.includeScope=test)
  mvn -o -q "${get[@]}" >/dev/null || mvn -q "${get[@]}" >/dev/null || die "cannot resolve the http module's test classpath"
  if [ "$1" = head ] && git rev-parse --verify -q HEAD >/dev/null 2>&1; then
    mkdir -p "$WORK/src"
    git archive HEAD http/src json/src | tar -x -C "$WORK/src"
    SRC="$WORK/src/http/src"
    JSON_SRC="$WORK/src/json/src"
    COMMIT=$(git rev-parse --short HEAD)
  else
    SRC="$ROOT/http/src"
    JSON_SRC="$ROOT/json/src"
    if git rev-parse --verify -q HEAD >/dev/null 2>&1; then
      COMMIT=$(git rev-parse --short HEAD)
      [ -n "$(git status --porcelain -- http/src 2>/dev/null)" ] && COMMIT="$COMMIT+worktree"
    else
      COMMIT=${COMMIT:-unknown}
    fi
  fi
  log "compiling http/src/main/java and the bench servers of $COMMIT ($1)"
  find "$SRC/main/java" "$JSON_SRC/main/java" "$SRC/test/java/herald/http/bench" -name '*.java' >"$WORK/sources.txt"
  "$JAVA_HOME/bin/javac" --release 21 -nowarn -d "$WORK/classes" -cp "$(cat "$WORK/deps.txt")" @"$WORK/sources.txt" \
    2>"$WORK/javac.log" || { cat "$WORK/javac.log" >&2; die "javac failed"; }
  BASE_CLASSPATH="$SRC/test/clojure:$SRC/main/clojure:$JSON_SRC/main/clojure:$SRC/main/resources:$WORK/classes"
  CP="$BASE_CLASSPATH:$(cat "$WORK/deps.txt")"
}

# bench_pipeline_lua: WORK/pipeline.lua, wrk's script that sends DEPTH (its argument) requests at once
bench_pipeline_lua() {
  cat >"$WORK/pipeline.lua" <<'EOF'
init = function(args)
  local r = {}
  local depth = tonumber(args[1]) or 1
  for i = 1, depth do r[i] = wrk.format() end
  req = table.concat(r)
end
request = function() return req end
EOF
}

# --- servers -----------------------------------------------------------------------------------------------
server_cp() { echo "$CP"; }

# start_server NAME [JVM FLAGS...]: starts server_main NAME on SERVER_CPU with JVM_FLAGS (or the flags given),
# waits for its READY <port> line, checks its answers (check_responses NAME) and sets PID[NAME], PORT[NAME]
start_server() {
  local s=$1 out="$WORK/$1.log" i flags
  shift
  if [ $# -gt 0 ]; then flags=("$@"); else flags=("${JVM_FLAGS[@]}"); fi
  unset "PORT[$s]"
  # shellcheck disable=SC2046
  "${ON_SERVER[@]}" "$JAVA_HOME/bin/java" "${flags[@]}" -cp "$(server_cp "$s")" $(server_main "$s") >"$out" 2>&1 &
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

# stop_server NAME: stops it and waits for it
stop_server() {
  kill "${PID[$1]}" 2>/dev/null || true
  wait "${PID[$1]}" 2>/dev/null || true
  unset "PID[$1]"
}

# check_responses NAME: fails unless /plaintext and /json answer 200 with the benchmark's bodies; with HEADS set,
# appends the response heads (Date left out) to WORK/heads.NAME
check_responses() {
  local url="http://127.0.0.1:${PORT[$1]}" body r
  command -v curl >/dev/null || return 0
  body=$(curl -sf "$url/plaintext") || die "$1: GET /plaintext failed"
  [ "$body" = "Hello, World!" ] || die "$1: /plaintext answered '$body'"
  body=$(curl -sf "$url/json") || die "$1: GET /json failed"
  [ "$body" = '{"message":"Hello, World!"}' ] || die "$1: /json answered '$body'"
  if [ -n "${HEADS:-}" ]; then
    for r in plaintext json; do
      curl -s -o /dev/null -D - "$url/$r" | tr -d '\r' | grep -v -i -E '^(date:|$)' | paste -sd'|' - \
        | sed "s#^#$r: #" >>"$WORK/heads.$1"
    done
  fi
}

# --- measuring ---------------------------------------------------------------------------------------------
cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
# "busy total" ticks of the server's core (all cores when unpinned), from /proc/stat
core_ticks() {
  local c=cpu; [ "$PINNING" != unpinned ] && c=cpu$SERVER_CPU
  awk -v c="$c" '$1 == c {t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t; exit}' /proc/stat
}
# other_pct PID CPU0 CORE0 CPU1 CORE1: share of the server core's time not charged to PID (other processes,
# interrupts: a noise indicator), from cpu_ticks and core_ticks readings before and after
other_pct() {
  local b0 t0 b1 t1
  read -r b0 t0 <<<"$3"; read -r b1 t1 <<<"$5"
  awk -v b=$((b1 - b0 - $4 + $2)) -v t=$((t1 - t0)) 'BEGIN { if (t > 0 && b > 0) printf "%.1f", 100 * b / t; else print 0 }'
}
to_ms() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n += 0; else if (v ~ /s$/) n *= 1000; printf "%.3f", n }'; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# run_wrk SERVER TEST SECONDS [CONNECTIONS]: wrk with one thread against PORT[SERVER]; TEST plaintext (pipelined
# PIPELINE deep), plaintext_np or json (not pipelined, with latencies). Leaves the figures in the W_* variables.
run_wrk() {
  local s=$1 t=$2 secs=$3 conns=${4:-$CONNECTIONS} url="http://127.0.0.1:${PORT[$1]}" out="$WORK/wrk.out" args
  case $t in
    plaintext) args=(-s "$WORK/pipeline.lua" "$url/plaintext" -- "$PIPELINE") ;;
    plaintext_np) args=(--latency "$url/plaintext") ;;
    json) args=(--latency "$url/json") ;;
    *) die "unknown test $t (plaintext, plaintext_np, json)" ;;
  esac
  local c0 s0 c1 s1
  c0=$(cpu_ticks "${PID[$s]}"); s0=$(core_ticks)
  "${ON_WRK[@]}" wrk -t1 -c"$conns" -d"${secs}s" --timeout 5s \
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
  W_OTHER=$(other_pct "${PID[$s]}" "$c0" "$s0" "$c1" "$s1")
  [ -n "$W_RPS" ] || { cat "$out" >&2; die "cannot parse wrk's output for $s $t"; }
}

# keep_run SERVER TEST: files the W_* figures for the medians unless the run had non-2xx answers
keep_run() {
  if [ "$W_NON2XX" -eq 0 ]; then
    echo "$W_RPS" >>"$WORK/rps.$1.$2"; echo "$W_CPU" >>"$WORK/cpu.$1.$2"
  else
    log "$1 $2: $W_NON2XX non-2xx responses, run left out of the medians"
  fi
  log "$1 $2: ${W_RPS} req/s, ${W_CPU} us CPU/req, p50=${W_P50:--} p99=${W_P99:--} ms, errors=$W_ERRORS, other load on the server core ${W_OTHER}%"
}

# median FILE [FORMAT]: the median of the numbers in FILE (one a line), 0 when there are none
median() {
  [ -s "$1" ] || { echo 0; return; }
  sort -g "$1" | awk -v f="${2:-%d}" '{v[NR] = $1} END {printf f "\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
ratio() { awk -v h="$1" -v n="$2" 'BEGIN { if (n > 0) printf "%.2f", h / n; else print "nan" }'; }

# run_rounds SERVERS TESTS: ROUNDS rounds of DURATION seconds per server and test, the order of the servers
# reversed every other round; record SERVER TEST (the script's) files each run. WORK/round.R.SERVER.TEST keeps
# each round's rate.
run_rounds() {
  local -a servers tests order
  read -r -a servers <<<"$1"; read -r -a tests <<<"$2"
  local r s t
  for r in $(seq 1 "$ROUNDS"); do
    order=("${servers[@]}")
    if [ $((r % 2)) -eq 0 ]; then order=(); for s in "${servers[@]}"; do order=("$s" "${order[@]}"); done; fi
    for t in "${tests[@]}"; do
      for s in "${order[@]}"; do
        run_wrk "$s" "$t" "$DURATION"
        record "$s" "$t"
        echo "$W_RPS" >"$WORK/round.$r.$s.$t"
      done
    done
  done
}
