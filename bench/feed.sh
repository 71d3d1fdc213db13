#!/usr/bin/env bash
# bench/feed.sh: the news feed service under the reference workload. Starts a fresh embedded service
# (feed/target/herald-feed.jar on a new temporary data directory), warms it up, drives it with the reference
# mix (closed-loop users, no think time, connection reuse: herald-load's feed mode, bin/herald-load, or wrk with
# bench/feed.lua, one connection per user, with LOADGEN=wrk), then reads the service's own per-minute figures
# (GET /perf) for every operation. Appends one row to
# bench/results/feed.csv. Then (herald-load only) a shorter run of a mix with reads, edits and deletes on the
# same warm service (issue 11: herald-load feed --reader-share, --read-post-share, --edit-share, --delete-share)
# appends a row to bench/results/feed-mix.csv. Prints two lines, the mix's first and the reference line last:
#   feed_mix users=<n> posts_per_s=<n> edits_per_s=<n> deletes_per_s=<n> post_reads_per_s=<n> feed_reads_per_s=<n> searches_per_s=<n> p50_ms=<x> p99_ms=<x> failures=<n>
#   feed users=<n> posts_per_s=<n> participants_per_s=<n> searches_per_s=<n> p50_ms=<x> p99_ms=<x>
# (post_reads: GETs of a post's link; feed_reads: a reader's inbound, outbound and friends GETs.)
# p50/p99 are the client-side latencies of every request of the mix (both generators are closed-loop and
# non-pipelined, so wrk's percentiles are valid too); the CSV row adds the client-side outbound-post p99 (herald-load
# only) and the server-side outbound-post median/p99 from /perf.
# The load generator and the service share this machine's cores (pin them with SERVER_CPU / LOADGEN_CPU).
# Environment (defaults in brackets): USERS [32], DURATION [30] measured seconds, WARMUP [90] seconds (the JIT
# is still compiling after 20-50 s: at 20 s a third of the service's CPU went to compiler threads),
# SEARCH_SHARE [0.1], FORM [0] (1 = form-encoded bodies), LOADGEN [auto: herald-load if bin/herald-load
# exists, else wrk], JVM_OPTS [-XX:+UseParallelGC -Xmx2g --enable-native-access=ALL-UNNAMED: make run's, the Makefile's
# JVM_OPTS, so the figures are those of the service as users start it], HTTP_MODE [virtual-threads] (or worker-pool,
# event-loop; passed to the service like every variable of docs/feed.md), SERVER_CPU [""],
# LOADGEN_CPU [""], SKIP_BUILD [0], RESULTS [bench/results/feed.csv], PORT [18090], KEEP_DATA [0],
# MIX_DURATION [20] measured seconds of the mix (0: no mix run), MIX_WARMUP [5] (its PATCH and DELETE paths are
# not in the reference warm-up), MIX_READER_SHARE [0.2], MIX_SEARCH_SHARE [SEARCH_SHARE], MIX_EDIT_SHARE [0.1],
# MIX_DELETE_SHARE [0.05], MIX_READ_POST_SHARE [0.2] (shares of the broadcasters' outbound operations),
# MIX_RESULTS [bench/results/feed-mix.csv],
# PROFILE [""] (comma list of async-profiler events, e.g. cpu,alloc: one extra profiled run of PROFILE_DURATION
# [20] seconds per event after the measured run, not recorded in the CSV; output in PROFILE_DIR
# [/tmp/herald-feed-profiles]: <event>.html flame graph, .collapsed stacks, .top.txt self-time leaves and the
# cost per outbound post).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
USERS=${USERS:-32}
DURATION=${DURATION:-30}
WARMUP=${WARMUP:-90}
SEARCH_SHARE=${SEARCH_SHARE:-0.1}
FORM=${FORM:-0}
JVM_OPTS=${JVM_OPTS:--XX:+UseParallelGC -Xmx2g --enable-native-access=ALL-UNNAMED} # = the Makefile's JVM_OPTS (make run)
SERVER_CPU=${SERVER_CPU:-}
LOADGEN_CPU=${LOADGEN_CPU:-${WRK_CPU:-}}
SKIP_BUILD=${SKIP_BUILD:-0}
RESULTS=${RESULTS:-$ROOT/bench/results/feed.csv}
PORT=${PORT:-18090}
KEEP_DATA=${KEEP_DATA:-0}
PROFILE=${PROFILE:-}
PROFILE_DURATION=${PROFILE_DURATION:-20}
PROFILE_DIR=${PROFILE_DIR:-/tmp/herald-feed-profiles}
LOADGEN=${LOADGEN:-auto}
MIX_DURATION=${MIX_DURATION:-20}
MIX_WARMUP=${MIX_WARMUP:-5}
MIX_READER_SHARE=${MIX_READER_SHARE:-0.2}
MIX_SEARCH_SHARE=${MIX_SEARCH_SHARE:-$SEARCH_SHARE}
MIX_EDIT_SHARE=${MIX_EDIT_SHARE:-0.1}
MIX_DELETE_SHARE=${MIX_DELETE_SHARE:-0.05}
MIX_READ_POST_SHARE=${MIX_READ_POST_SHARE:-0.2}
MIX_RESULTS=${MIX_RESULTS:-$ROOT/bench/results/feed-mix.csv}
if [ "$LOADGEN" = auto ]; then if [ -x "$ROOT/bin/herald-load" ]; then LOADGEN=herald-load; else LOADGEN=wrk; fi; fi
export SEARCH_SHARE FORM

log() { echo "bench/feed: $*" >&2; }
die() { log "$*"; exit 1; }

WORK=$(mktemp -d /tmp/herald-bench-feed.XXXXXX)
SERVER_PID=""
cleanup() {
  local rc=$?
  if [ -n "$SERVER_PID" ]; then kill -TERM "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  if [ $rc -eq 0 ] && [ "$KEEP_DATA" != 1 ]; then rm -rf "$WORK"; else log "logs and data kept in $WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

JAVA_HOME=$("$ROOT/build/find-jdk.sh") || die "no JDK >= 21"
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
JAVA_MAJOR=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
if [ "$JAVA_MAJOR" -ge 23 ]; then export MAVEN_OPTS=--sun-misc-unsafe-memory-access=allow; fi
if [ "$LOADGEN" = wrk ]; then
  command -v wrk >/dev/null || { [ "$(id -u)" = 0 ] && apt-get install -y -qq wrk >/dev/null 2>&1; } || true
  command -v wrk >/dev/null || die "wrk is missing: apt-get install wrk"
fi
command -v curl >/dev/null || die "curl is missing"

JAR="$ROOT/feed/target/herald-feed.jar"
if [ "$SKIP_BUILD" != 1 ] || [ ! -f "$JAR" ]; then
  log "building $JAR"
  (cd "$ROOT" && mvn -B -q -o -ntp -pl feed -am -DskipTests -Dmaven.test.skip=true package >"$WORK/build.log" 2>&1) \
    || (cd "$ROOT" && mvn -B -q -ntp -pl feed -am -DskipTests -Dmaven.test.skip=true package >"$WORK/build.log" 2>&1) \
    || die "build failed, see $WORK/build.log"
fi

pin() { local cpu=$1; shift; if [ -n "$cpu" ] && command -v taskset >/dev/null; then taskset -c "$cpu" "$@"; else "$@"; fi; }
read -r -a JVM_ARGS <<<"$JVM_OPTS"
SERVER_CMD=(java "${JVM_ARGS[@]}" -jar "$JAR")
if [ -n "$SERVER_CPU" ] && command -v taskset >/dev/null; then SERVER_CMD=(taskset -c "$SERVER_CPU" "${SERVER_CMD[@]}"); fi

# --- the service --------------------------------------------------------------------------------------------
log "starting the service on 127.0.0.1:$PORT, data in $WORK/data ($JVM_OPTS)"
# taskset execs java: $! is the service's own pid (for its CPU time and the graceful SIGTERM at the end)
PORT=$PORT HOST=127.0.0.1 DATA_DIR="$WORK/data" "${SERVER_CMD[@]}" >"$WORK/server.out" 2>"$WORK/server.err" &
SERVER_PID=$!
for _ in $(seq 1 120); do
  grep -q "listening on" "$WORK/server.out" 2>/dev/null && break
  kill -0 "$SERVER_PID" 2>/dev/null || die "the service exited; see $WORK/server.err"
  sleep 0.5
done
grep -q "listening on" "$WORK/server.out" || die "the service did not start in 60 s"
BASE="http://127.0.0.1:$PORT"

run_load() { # seconds output-file [herald-load options, e.g. the mix's shares, which come after and win]
  if [ "$LOADGEN" = wrk ]; then
    pin "$LOADGEN_CPU" wrk -t "$USERS" -c "$USERS" -d "${1}s" --timeout 10s -s "$ROOT/bench/feed.lua" "$BASE" >"$2" 2>&1
  else
    local form=(); [ "$FORM" = 1 ] && form=(--form)
    local secs=$1 out=$2; shift 2
    pin "$LOADGEN_CPU" "$ROOT/bin/herald-load" feed --host 127.0.0.1 --port "$PORT" --users "$USERS" \
      --search-share "$SEARCH_SHARE" --duration "$secs" --progress json "${form[@]}" "$@" >"$out" 2>"$out.err"
  fi
}

# the measured run's figures as shell assignments: SECS POSTS PARTS FRIENDS SEARCHES P50 P99 POST_P99 FAILURES REQS
figures() {
  if [ "$LOADGEN" = wrk ]; then
    local line; line=$(grep '^WRKFEED' "$1") || die "no summary from wrk: $(cat "$1")"
    sed 's/^WRKFEED //' <<<"$line" | tr ' ' '\n' | awk -F= '
      $1=="seconds"{print "SECS="$2} $1=="posts"{print "POSTS="$2} $1=="participants"{print "PARTS="$2}
      $1=="friends"{print "FRIENDS="$2} $1=="searches"{print "SEARCHES="$2} $1=="p50_ms"{print "P50="$2}
      $1=="p99_ms"{print "P99="$2} $1=="failures"{f+=$2} $1=="errors"{f+=$2} $1=="requests"{print "REQS="$2}
      END{print "FAILURES="f; print "POST_P99=na"}'
  else
    python3 - "$1" <<'PY'
import json, sys
s = next(json.loads(l) for l in open(sys.argv[1]) if '"type":"summary"' in l)
ops = s["operations"]
n = lambda k: ops.get(k, {}).get("latency", {}).get("count", 0)
print(f'SECS={s["duration-s"]:.3f}')
print(f'POSTS={n("outbound post")}'); print(f'PARTS={n("participant post")}')
print(f'FRIENDS={n("friends post")}'); print(f'SEARCHES={n("outbound search")}')
print(f'P50={s["latency"]["p50"]}'); print(f'P99={s["latency"]["p99"]}')
print(f'POST_P99={ops.get("outbound post", {}).get("latency", {}).get("p99", "na")}')
print(f'FAILURES={sum(s["errors"].values())}'); print(f'REQS={s["requests"]}')
PY
  fi
}

log "warm-up ${WARMUP}s, $USERS users, load generator $LOADGEN"
run_load "$WARMUP" "$WORK/warmup.txt" || die "load generator failed: $(tail -3 "$WORK/warmup.txt"*)"
sleep 1
LOAD_BEFORE=$(cut -d' ' -f1 /proc/loadavg)
log "measuring ${DURATION}s, $USERS users (load average before: $LOAD_BEFORE)"
FROM_MS=$(date +%s%3N)
read -r CPU0 < <(awk '{print $14+$15}' "/proc/$SERVER_PID/stat")
run_load "$DURATION" "$WORK/run.txt" || die "load generator failed: $(tail -3 "$WORK/run.txt"*)"
read -r CPU1 < <(awk '{print $14+$15}' "/proc/$SERVER_PID/stat")
TO_MS=$(date +%s%3N)
eval "$(figures "$WORK/run.txt")"
rate() { awk -v n="$1" -v s="$SECS" 'BEGIN { printf "%.0f", n / s }'; }
POSTS_S=$(rate "$POSTS"); PART_S=$(rate "$PARTS"); FRIENDS_S=$(rate "$FRIENDS"); SEARCH_S=$(rate "$SEARCHES")
CLK=$(getconf CLK_TCK)
CPU_US_PER_REQ=$(awk -v a="$CPU0" -v b="$CPU1" -v n="$REQS" -v c="$CLK" 'BEGIN { printf "%.1f", (b - a) / c * 1e6 / (n > 0 ? n : 1) }')
ERRORS=0

# server-side outbound-post figures of the measured minutes (the service's own /perf)
PERF=$(curl -s "$BASE/perf?from=$FROM_MS&to=$TO_MS")
echo "$PERF" >"$WORK/perf.json"
SERVER_POST=$(python3 - "$WORK/perf.json" <<'PY' || echo "na na"
import json, sys
from collections import defaultdict
rows = json.load(open(sys.argv[1]))["minutes"]
ops = defaultdict(list)
for r in rows: ops[(r["entity"], r["operation"])].append(r)
for (e, o), rs in sorted(ops.items()):
    big = max(rs, key=lambda r: r["count"])
    print(f'bench/feed: server {e} {o}: busiest minute count={big["count"]} median_ms={big["median_ms"]} p95_ms={big["p95_ms"]} p99_ms={big["p99_ms"]} max_ms={big["max_ms"]} errors={big["errors"]}', file=sys.stderr)
posts = ops.get(("outbound", "post"))
big = max(posts, key=lambda r: r["count"]) if posts else None
print(f'{big["median_ms"]} {big["p99_ms"]}' if big else "na na")
PY
)
read -r SRV_P50 SRV_P99 <<<"$SERVER_POST"

# --- record -------------------------------------------------------------------------------------------------
COMMIT=$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)
JVM=$(java -version 2>&1 | head -1 | tr -d '",')
GC=$(sed -n 's/.*-XX:+Use\([A-Za-z]*GC\).*/\1/p' <<<"$JVM_OPTS"); GC=${GC:-default}
mkdir -p "$(dirname "$RESULTS")"
[ -f "$RESULTS" ] || echo "date,commit,cores,jvm,gc,jvm_opts,server_cpu,loadgen_cpu,users,search_share,form,duration_s,posts_per_s,participants_per_s,friends_per_s,searches_per_s,p50_ms,p99_ms,client_post_p99_ms,server_post_p50_ms,server_post_p99_ms,server_cpu_us_per_req,failures,load_generator,loadavg_before,note" >"$RESULTS"
NOTE=${NOTE:-"load generator and service shared the $(nproc) cores of this machine"}
GEN=$([ "$LOADGEN" = wrk ] && echo "wrk+bench/feed.lua" || echo "herald-load feed")
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ),$COMMIT,$(nproc),$JVM,$GC,$JVM_OPTS HTTP_MODE=${HTTP_MODE:-virtual-threads},${SERVER_CPU:-any},${LOADGEN_CPU:-any},$USERS,$SEARCH_SHARE,$FORM,$SECS,$POSTS_S,$PART_S,$FRIENDS_S,$SEARCH_S,$P50,$P99,$POST_P99,$SRV_P50,$SRV_P99,$CPU_US_PER_REQ,$FAILURES,$GEN,$LOAD_BEFORE,$NOTE" >>"$RESULTS"

# --- the mix with reads, edits and deletes (herald-load only), on the same warm service ----------------------
MIX_LINE=""
if [ "$LOADGEN" != wrk ] && [ "$MIX_DURATION" != 0 ]; then
  MIX_LOAD_BEFORE=$(cut -d' ' -f1 /proc/loadavg)
  log "mix: ${MIX_DURATION}s (warm-up ${MIX_WARMUP}s), $USERS users, readers $MIX_READER_SHARE, searchers $MIX_SEARCH_SHARE; of the outbound operations: edits $MIX_EDIT_SHARE, deletes $MIX_DELETE_SHARE, post reads $MIX_READ_POST_SHARE"
  run_load "$MIX_DURATION" "$WORK/mix.txt" --warmup "$MIX_WARMUP" --search-share "$MIX_SEARCH_SHARE" \
    --reader-share "$MIX_READER_SHARE" --edit-share "$MIX_EDIT_SHARE" --delete-share "$MIX_DELETE_SHARE" \
    --read-post-share "$MIX_READ_POST_SHARE" || die "load generator failed (mix): $(tail -3 "$WORK/mix.txt"*)"
  MIX_FIGURES=$(python3 - "$WORK/mix.txt" <<'PY'
import json, sys
s = next(json.loads(l) for l in open(sys.argv[1]) if '"type":"summary"' in l)
ops = s["operations"]
n = lambda k: ops.get(k, {}).get("latency", {}).get("count", 0)
secs = max(s["duration-s"], 1e-9)
r = lambda c: f'{c / secs:.0f}'
print(f'M_POSTS_S={r(n("outbound post"))} M_EDITS_S={r(n("outbound patch"))} M_DELETES_S={r(n("outbound delete"))}')
print(f'M_POST_READS_S={r(n("outbound get-one"))} M_SEARCH_S={r(n("outbound search"))}')
print(f'M_FEED_READS_S={r(n("inbound get") + n("outbound get") + n("friends get"))}')
print(f'M_P50={s["latency"]["p50"]} M_P99={s["latency"]["p99"]} M_FAILURES={sum(s["errors"].values())} M_SECS={s["duration-s"]:.3f}')
for k, o in sorted(ops.items()):
    l = o.get("latency", {})
    print(f'bench/feed: mix {k}: count={l.get("count", 0)} p50_ms={l.get("p50")} p99_ms={l.get("p99")} max_ms={l.get("max")} errors={sum(o.get("errors", {}).values())}', file=sys.stderr)
PY
) || die "no summary from the mix run: $(tail -3 "$WORK/mix.txt"*)"
  eval "$MIX_FIGURES"
  MIX_LINE="feed_mix users=$USERS posts_per_s=$M_POSTS_S edits_per_s=$M_EDITS_S deletes_per_s=$M_DELETES_S post_reads_per_s=$M_POST_READS_S feed_reads_per_s=$M_FEED_READS_S searches_per_s=$M_SEARCH_S p50_ms=$M_P50 p99_ms=$M_P99 failures=$M_FAILURES"
  [ -f "$MIX_RESULTS" ] || echo "date,commit,cores,jvm,gc,jvm_opts,users,reader_share,search_share,edit_share,delete_share,read_post_share,duration_s,posts_per_s,edits_per_s,deletes_per_s,post_reads_per_s,feed_reads_per_s,searches_per_s,p50_ms,p99_ms,failures,loadavg_before,note" >"$MIX_RESULTS"
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ),$COMMIT,$(nproc),$JVM,$GC,$JVM_OPTS HTTP_MODE=${HTTP_MODE:-virtual-threads},$USERS,$MIX_READER_SHARE,$MIX_SEARCH_SHARE,$MIX_EDIT_SHARE,$MIX_DELETE_SHARE,$MIX_READ_POST_SHARE,$M_SECS,$M_POSTS_S,$M_EDITS_S,$M_DELETES_S,$M_POST_READS_S,$M_FEED_READS_S,$M_SEARCH_S,$M_P50,$M_P99,$M_FAILURES,$MIX_LOAD_BEFORE,$NOTE" >>"$MIX_RESULTS"
elif [ "$LOADGEN" = wrk ]; then
  log "no mix run with wrk (bench/feed.lua sends the reference mix only)"
fi

# --- profiling (PROFILE=cpu,alloc), after the measured run ------------------------------------------------
profiler_lib() {
  local get=(dependency:copy -Dartifact=tools.profiler:async-profiler:4.2 -DoutputDirectory="$WORK" -Dmdep.stripVersion=true)
  (cd "$ROOT" && { mvn -o -q -B "${get[@]}" >/dev/null 2>&1 || mvn -q -B "${get[@]}" >/dev/null; }) || die "cannot fetch async-profiler"
  (cd "$WORK" && unzip -qo async-profiler.jar 'linux-x64/libasyncProfiler.so')
  echo "$WORK/linux-x64/libasyncProfiler.so"
}
agent_cmd() { # PID LIB ARGS (quoted for jcmd, which splits on '=')
  local out; out=$(jcmd "$1" JVMTI.agent_load "$2" "\"$3\"" 2>&1)
  grep -q 'return code: 0' <<<"$out" || die "async-profiler '$3' failed in pid $1: $out"
}
summarise() { # FILE.collapsed POSTS: the total per outbound post, then the top self-time leaves and threads
  awk -v n="$2" '{t += $NF} END {printf "total %.0f, per outbound post %.0f (cpu: ns; alloc: bytes)\n", t, (n > 0 ? t / n : 0)}' "$1"
  echo "-- by thread (first frame)"
  awk '{c = $NF; $NF = ""; split($0, f, ";"); th = f[1]; gsub(/[0-9]+/, "N", th); s[th] += c; t += c}
    END {for (k in s) printf "%6.2f%% %s\n", 100 * s[k] / t, k}' "$1" | sort -g -r | awk 'NR <= 15'
  echo "-- self time by leaf frame"
  awk '{c = $NF; $NF = ""; k = split($0, f, ";"); leaf = f[k]; sub(/ +$/, "", leaf); self[leaf] += c; tot += c}
    END {for (l in self) printf "%6.2f%% %s\n", 100 * self[l] / tot, l}' "$1" | sort -k1,1 -g -r | awk 'NR <= 50'
}
if [ -n "$PROFILE" ]; then
  LIB=$(profiler_lib)
  mkdir -p "$PROFILE_DIR"
  for ev in ${PROFILE//,/ }; do
    base="$PROFILE_DIR/$ev"
    agent_cmd "$SERVER_PID" "$LIB" "start,event=$ev$([ "$ev" = cpu ] && echo ,interval=1ms),threads"
    run_load "$PROFILE_DURATION" "$WORK/profile-$ev.txt" || die "load generator failed while profiling"
    agent_cmd "$SERVER_PID" "$LIB" "dump,collapsed,total,threads,file=$base.collapsed"
    agent_cmd "$SERVER_PID" "$LIB" "stop,flamegraph,total,title=feed-$ev,file=$base.html"
    P_POSTS=$(eval "$(figures "$WORK/profile-$ev.txt")"; echo "$POSTS")
    summarise "$base.collapsed" "$P_POSTS" >"$base.top.txt"
    log "profile $ev: $P_POSTS posts (profiled run), $base.{html,collapsed,top.txt}"
  done
fi

log "friends_per_s=$FRIENDS_S failures=$FAILURES client_post_p99_ms=$POST_P99 server_post_p50_ms=$SRV_P50 server_post_p99_ms=$SRV_P99 server_cpu_us_per_req=$CPU_US_PER_REQ (row appended to $RESULTS)"
if [ -n "$MIX_LINE" ]; then echo "$MIX_LINE"; fi
echo "feed users=$USERS posts_per_s=$POSTS_S participants_per_s=$PART_S searches_per_s=$SEARCH_S p50_ms=$P50 p99_ms=$P99"
