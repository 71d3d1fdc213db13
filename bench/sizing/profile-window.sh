#!/usr/bin/env bash
# bench/sizing/profile-window.sh: one server's CPU per post in a running :scale cluster under a workload, split by what
# it does, from an async-profiler CPU profile (1 ms) of SECONDS taken while the instances count the posts they answer.
#   bench/sizing/profile-window.sh DIR cassandra|opensearch [SECONDS=60] [LABEL]
# DIR is a bin/herald-cluster directory that is up, under load (e.g. `herald-load feed` through its balancer) and warm
# (>= 3 minutes: the server's JIT). Prints one line:
#   profile server=<s> label=<l> posts=<n> cpu_ms=<n> us_per_post=<x> nojit_us_per_post=<x> <part>_us_per_post=<x> ... load=<x>
# cpu_ms from /proc/PID/stat over the window; each part's share of the profile's samples applied to it. Parts:
# Cassandra: jit (C1/C2), spin (the shared request pool's idle workers: SEPWorker.doWaitSpin), ticker (the
# ScheduledFastTasks thread: the approximate clock), batch (BatchMessage: the fan-out's and publish's writes),
# read (SelectStatement), flush, compaction; OpenSearch: jit, search (the search pool), write (the bulk requests),
# refresh, merge, http (transport_worker: the HTTP layer), gc. The profile (collapsed stacks) stays in
# DIR/profile-<server>-<label>.collapsed.
# ASYNC_PROFILER_LIB [downloads tools.profiler:async-profiler:4.2 with Maven, as bench/feed.sh], JCMD [JDK 17's].
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$1 SERVER=$2 SECS=${3:-60} LABEL=${4:-$(date -u +%H%M%S)}
JCMD=${JCMD:-$(ls /usr/lib/jvm/*17*/bin/jcmd 2>/dev/null | head -1)}
LIB=${ASYNC_PROFILER_LIB:-$DIR/linux-x64/libasyncProfiler.so}
if [ ! -f "$LIB" ]; then
  (cd "$ROOT" && mvn -q -B dependency:copy -Dartifact=tools.profiler:async-profiler:4.2 -DoutputDirectory="$DIR" \
     -Dmdep.stripVersion=true >/dev/null) && (cd "$DIR" && unzip -qo async-profiler.jar 'linux-x64/libasyncProfiler.so')
fi
. "$ROOT/bench/sizing/window.sh"
cluster_of "$DIR"
PID=$(pid_of "$SERVER")
ticks() { awk '{ sub(/.*\) /, ""); split($0, f, " "); print f[12] + f[13] }' "/proc/$1/stat"; }
OUT=$DIR/profile-$SERVER-$LABEL.collapsed
agent() { local o; o=$("$JCMD" "$PID" JVMTI.agent_load "$LIB" "\"$1\"" 2>&1); grep -q 'return code: 0' <<<"$o" || { echo "$o" >&2; exit 1; }; }
p0=$(posts) t0=$(ticks "$PID")
agent "start,event=cpu,interval=1ms,threads"
sleep "$SECS"
agent "stop,file=$OUT,collapsed"
p1=$(posts) t1=$(ticks "$PID")
case $SERVER in
  cassandra) PARTS='jit=CompilerThre|spin=SEPWorker.doWaitSpin|ticker=[ScheduledFastTasks|batch=BatchMessage.execute|read=SelectStatement.execute|flush=Flush|compaction=Compaction' ;;
  opensearch) PARTS='jit=CompilerThre|search=][search]|write=][write]|refresh=][refresh]|merge=Merge Thread|http=][transport_worker]|gc=GC Thread' ;;
  *) PARTS='jit=CompilerThre' ;;
esac
awk -v PARTS="$PARTS" -v posts=$((p1 - p0)) -v ticks=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v s="$SERVER" -v l="$LABEL" \
    -v load="$(cut -d' ' -f1 /proc/loadavg)" '
  BEGIN { n = split(PARTS, p, "|"); for (i = 1; i <= n; i++) { split(p[i], kv, "="); name[i] = kv[1]; pat[i] = kv[2] } }
  { c = $NF; t += c; for (i = 1; i <= n; i++) if (index($0, pat[i])) { hit[i] += c; if (name[i] == "jit") jit += c } }
  END {
    ms = ticks * 1000 / hz; per = (posts > 0 ? ms * 1000 / posts : 0)
    line = sprintf("profile server=%s label=%s posts=%d cpu_ms=%d us_per_post=%.0f nojit_us_per_post=%.0f", s, l, posts, ms, per, (t > 0 ? per * (t - jit) / t : 0))
    for (i = 1; i <= n; i++) if (name[i] != "jit") line = line sprintf(" %s_us_per_post=%.0f", name[i], (t > 0 ? per * hit[i] / t : 0))
    print line sprintf(" jit_share=%.2f samples=%d load=%s", (t > 0 ? jit / t : 0), t, load) }' "$OUT"
