#!/usr/bin/env bash
# bench/feed-scale.sh: the feed's :scale profile as a cluster under the reference workload. Starts the local cluster
# (bin/herald-cluster: Kafka, PostgreSQL, Redis, Cassandra, OpenSearch, HAProxy, N feed instances), and for each
# instance count (1, then 3 on the same servers) warms up and drives the reference mix through the balancer with
# `herald-load feed` (closed-loop users, no think time), while a probe measures, from a post's acknowledgement, when
# it is visible in a friend's inbound feed (fan-out lag) and in search (search lag). CPU time of every process
# (/proc/PID/stat utime+stime, process trees summed: PostgreSQL's backends) is taken over the measured run (from the
# load's first progress line to the one that ends its run). Prints, per instance count, the CPU per process (seconds,
# cores, microseconds per post; the load generator's JVM on a line of its own, `process=generator`, not counted in the
# cluster's figures: what else the cores carried), then last:
#   feed_scale instances=<n> posts_per_s=<n> p99_ms=<x> fanout_lag_p99_ms=<x> search_lag_p99_ms=<x> cpu_us_per_post=<x> marginal_cpu_us_per_post=<x>
# p99_ms: every request of the mix, client side, through the balancer; cpu_us_per_post: the CPU time of every
# cluster process (not the load generator's) per second of the window, divided by the posts acknowledged per second
# of the run (so it carries the participants, friendships and searches of the mix too). The load generator, the probe and every server
# share this machine's cores (nothing is pinned). A benchmark, not a test: run it by hand on a quiet machine.
# Before each measured run the cluster idles IDLE seconds: each process's CPU then (`idle_cores`: Kafka Streams polls
# and commits, server housekeeping) is the fixed cost, and `marginal_us_per_post` = (cores - idle_cores) / posts per
# second is the cost the posts add (robust where a starved run's few posts would carry the fixed costs); the line of
# each JVM (instances, Kafka, Cassandra, OpenSearch) also has `jit_cores`, its JIT compiler threads (C1/C2) over the
# window, which a short warm-up leaves running (half of an instance's CPU in the 2026-11-26 runs, and 0.05 of
# Kafka's ~0.1 cores at idle on a machine at load 30). The summary line ends with `marginal_cpu_us_per_post`, the sum.
# OpenSearch's idle window is not its fixed cost: right after the warm-up it runs the merges (and the index job's
# catch-up) that the warm-up's segments started (0.3-0.9 cores; a node idle for long uses ~0.01), so its marginal
# figure comes out negative: read its us_per_post (bench/results/feed-scale.md, session 11).
# Environment (defaults in brackets): INSTANCES ["1 3"], USERS [32], DURATION [30] measured seconds, WARMUP [60]
# seconds (per instance count), IDLE [10] seconds of no load before each measured run, SEARCH_SHARE [0.1], PROBE_MS
# [250] between probe posts, DIR [a new temporary
# directory, removed at the end unless KEEP=1], RESULTS [""] (a file to append the figures to).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
INSTANCES=${INSTANCES:-"1 3"}
USERS=${USERS:-32}
DURATION=${DURATION:-30}
WARMUP=${WARMUP:-60}
IDLE=${IDLE:-10}
SEARCH_SHARE=${SEARCH_SHARE:-0.1}
PROBE_MS=${PROBE_MS:-250}
KEEP=${KEEP:-0}
RESULTS=${RESULTS:-}
DIR=${DIR:-$(mktemp -d /tmp/herald-feed-scale.XXXXXX)}
CLUSTER="$ROOT/bin/herald-cluster"

log() { echo "bench/feed-scale: $*" >&2; }
die() { log "$*"; exit 1; }
cleanup() {
  local rc=$?
  "$CLUSTER" down --dir "$DIR" >/dev/null 2>&1 || true
  if [ $rc -eq 0 ] && [ "$KEEP" != 1 ]; then rm -rf "$DIR"; else log "logs and data kept in $DIR"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
command -v python3 >/dev/null || die "python3 is missing"

# "name pid" of each cluster process that is up, into $W/pids: read once per measured run, so that a snapshot is
# only reads of /proc (the status command takes seconds on a loaded machine, which once fell inside the window)
cluster_pids() {
  { "$CLUSTER" status --dir "$DIR" || true; } | awk '$1 == "state" && $3 == "up" { sub("pid=", "", $5); print $2, $5 }' >"$W/pids"
}

# CPU ticks of each cluster process and its descendants: "name ticks" lines
cpu_snapshot() { tree_ticks <"$W/pids"; }

# Python shared by tree_ticks and gen_poll: ticks() reads /proc once and returns tree(pid), the CPU ticks of a process
# and its descendants, living or ended (utime + stime, plus the same of children that ended and were waited for: their
# time moves to the parent)
TICKS_PY='
import os
def ticks():
    stat = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
                stat[int(p)] = (int(f[1]), int(f[11]) + int(f[12]) + int(f[13]) + int(f[14]))   # ppid, ticks
            except OSError:
                pass
    kids = {}
    for p, (pp, _) in stat.items(): kids.setdefault(pp, []).append(p)
    def tree(p): return stat.get(p, (0, 0))[1] + sum(tree(c) for c in kids.get(p, []))
    return tree
'

# "name pid" lines on stdin -> "name ticks" lines: CPU ticks of each process tree
tree_ticks() {
  python3 -c "$TICKS_PY"'
import sys
tree = ticks()
for line in sys.stdin:
    name, pid = line.split()
    print(name, tree(int(pid)))'
}

# gen_poll PID FILE: every 0.25 s, "generator TICKS" of PID's process tree into FILE, until the process ends (the load
# generator exits right after the progress line that closes the window, before a snapshot could read it)
gen_poll() {
  python3 -c "$TICKS_PY"'
import sys, time
pid, out = int(sys.argv[1]), sys.argv[2]
while os.path.exists(f"/proc/{pid}"):
    t = ticks()(pid)
    open(out + ".tmp", "w").write(f"generator {t}\n"); os.replace(out + ".tmp", out)
    time.sleep(0.25)' "$1" "$2" &
}

# CPU ticks of the JIT compiler threads (C1/C2 CompilerThread) of each JVM (instances, Kafka, Cassandra,
# OpenSearch): "name ticks" lines
jit_snapshot() {
  awk '$1 ~ /^(instance-|kafka|cassandra|opensearch)/' "$W/pids" | python3 -c '
import os, sys
for line in sys.stdin:
    name, pid = line.split(); t = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        tasks = []
    for task in tasks:
        try:
            if open(f"/proc/{pid}/task/{task}/comm").read().startswith(("C1 CompilerThre", "C2 CompilerThre")):
                f = open(f"/proc/{pid}/task/{task}/stat").read().rsplit(")", 1)[1].split(); t += int(f[11]) + int(f[12])
        except OSError:
            pass
    print(name, t)'
}

# the probe: posts every PROBE_MS through the balancer for SECONDS, one post after the other (one author: one Kafka
# partition, so the jobs take them in order); one thread polls a friend's inbound feed for the posts not yet seen
# there, another searches a word only this run's probe posts carry (`limit=1000`): k results mean the first k posts
# are searchable (an index refresh shows every document indexed before it). Both up to 30 s after a post's
# acknowledgement, each one request at a time, beside the posting: a slow search delays no fan-out check (the first
# probe, one loop for posting and both checks with a search per unseen post, measured its own queue: a round took
# ~0.5 s under load, and its lags included it). Prints one JSON summary (lags in ms from the acknowledgement; a post
# unseen after 30 s counts as unseen, not as a lag).
probe() { # BASE SECONDS OUT
  python3 - "$1" "$2" "$PROBE_MS" >"$3" <<'PY'
import json, sys, threading, time, urllib.request
base, secs, every = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]) / 1000
def call(path, body=None):
    req = urllib.request.Request(base + path, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST" if body else "GET")
    with urllib.request.urlopen(req, timeout=10) as r: return json.loads(r.read())
a = call("/participant", {"name": "probe-a"})["id"]; b = call("/participant", {"name": "probe-b"})["id"]
call(f"/participant/{a}/friends", {"from": f"/participant/{a}", "to": f"/participant/{b}"})
lock = threading.Lock()
word = f"lagprobe{int(time.time() * 1000)}"   # in every probe post of this run, and in no other post
acked, fan, search, failed, n = {}, {}, {}, 0, 0   # token -> acknowledged at; token -> lag in ms
start = time.time(); posting_until = start + secs
def deadline_passed(): return time.time() > posting_until + 30
def waiting(seen):
    with lock: return [t for t, at in acked.items() if t not in seen and time.time() - at <= 30]
def watch_fanout():
    while not deadline_passed():
        todo = waiting(fan)
        if not todo and time.time() > posting_until: break
        try:
            got = {i.get("subject") for i in call(f"/participant/{b}/inbound?limit=500")}
            now = time.time()
            for t in todo:
                if t in got: fan[t] = (now - acked[t]) * 1000
        except Exception:
            pass
        time.sleep(0.01)
def watch_search():
    while not deadline_passed():
        with lock: order = list(acked)
        if all(t in search for t in order) and time.time() > posting_until: break
        try:
            k = len(call(f"/outbound?keywords={word}&limit=1000"))
            now = time.time()
            for t in order[:k]:
                if t not in search and now - acked[t] <= 30: search[t] = (now - acked[t]) * 1000
        except Exception:
            pass
        time.sleep(0.01)
watchers = [threading.Thread(target=watch_fanout), threading.Thread(target=watch_search)]
for th in watchers: th.start()
while time.time() < posting_until:
    n += 1; token = f"probe{int(time.time() * 1000)}x{n}"
    try:
        call(f"/participant/{a}/outbound", {"from": f"/participant/{a}", "occurred": "2026-11-25", "subject": token, "story": f"{word} {token}"})
        with lock: acked[token] = time.time()
    except Exception:
        failed += 1
    time.sleep(max(0, start + n * every - time.time()))
for th in watchers: th.join()
unseen = sum(1 for t in acked if t not in fan or t not in search)
def pct(xs, q): xs = sorted(xs); return round(xs[min(len(xs) - 1, int(q * len(xs)))], 1) if xs else None
print(json.dumps({"samples": n, "post_errors": failed, "unseen_in_30s": unseen,
                  "fanout_p50": pct(fan.values(), .5), "fanout_p99": pct(fan.values(), .99), "fanout_max": pct(fan.values(), 1),
                  "search_p50": pct(search.values(), .5), "search_p99": pct(search.values(), .99), "search_max": pct(search.values(), 1)}))
PY
}

run_load() { # PORT SECONDS OUT
  "$ROOT/bin/herald-load" feed --host 127.0.0.1 --port "$1" --users "$USERS" --search-share "$SEARCH_SHARE" \
    --duration "$2" --progress json >"$3" 2>"$3.err"
}

# the measured run's figures: POSTS SECS P99 POST_P99 ERRORS
figures() {
  python3 - "$1" <<'PY'
import json, sys
s = next(json.loads(l) for l in open(sys.argv[1]) if '"type":"summary"' in l)
ops = s["operations"]
print(ops.get("outbound post", {}).get("latency", {}).get("count", 0), round(s["duration-s"], 3), s["latency"]["p99"],
      ops.get("outbound post", {}).get("latency", {}).get("p99", "na"), sum(s["errors"].values()))
PY
}

"$ROOT/bin/herald-load" --help >/dev/null 2>&1 || die "bin/herald-load does not run"
COMMIT=$(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo unknown)
SUMMARY=()
for n in $INSTANCES; do
  log "cluster with $n instance(s) under $DIR"
  OUT=$("$CLUSTER" up --dir "$DIR" --instances "$n") || die "bin/herald-cluster up failed"
  PORT=$(sed -n 's|^balancer http://127.0.0.1:\([0-9]*\)$|\1|p' <<<"$OUT")
  W="$DIR/bench-$n"; mkdir -p "$W"
  log "warm-up ${WARMUP}s, $USERS users through the balancer (port $PORT)"
  run_load "$PORT" "$WARMUP" "$W/warmup.json" || die "herald-load failed: $(tail -3 "$W/warmup.json.err")"
  log "idle ${IDLE}s (each process's fixed CPU)"
  cluster_pids
  cpu_snapshot >"$W/idle0"; I0=$(date +%s.%N); sleep "$IDLE"; cpu_snapshot >"$W/idle1"; I1=$(date +%s.%N)
  LOAD_BEFORE=$(cut -d' ' -f1 /proc/loadavg)
  log "measuring ${DURATION}s (load average before: $LOAD_BEFORE)"
  # the CPU window opens at the load's first progress line (its JVM is up and sending, ~1 s in) and closes at the
  # progress line that ends the run (the generator may take a while to exit after it)
  run_load "$PORT" "$DURATION" "$W/run.json" & LOAD=$!
  last_t() { grep -o '"t":[0-9.]*' "$W/run.json" 2>/dev/null | tail -1 | cut -d: -f2; }
  until [ -n "$(last_t)" ] || ! kill -0 "$LOAD" 2>/dev/null; do sleep 0.05; done
  rm -f "$W/gen"; gen_poll "$LOAD" "$W/gen"
  until [ -s "$W/gen" ] || ! kill -0 "$LOAD" 2>/dev/null; do sleep 0.02; done
  T0=$(date +%s.%N); cp "$W/gen" "$W/gen0"; cpu_snapshot >"$W/cpu0"; jit_snapshot >"$W/jit0"
  probe "http://127.0.0.1:$PORT" "$DURATION" "$W/probe.json" & PROBE=$!
  until awk -v t="$(last_t)" -v d="$DURATION" 'BEGIN { exit !(t + 0.3 >= d) }' || ! kill -0 "$LOAD" 2>/dev/null; do sleep 0.05; done
  cp "$W/gen" "$W/gen1"; cpu_snapshot >"$W/cpu1"; jit_snapshot >"$W/jit1"; T1=$(date +%s.%N)
  wait "$LOAD" || die "herald-load failed: $(tail -3 "$W/run.json.err")"
  wait "$PROBE" || die "the lag probe failed"
  read -r POSTS SECS P99 POST_P99 ERRORS < <(figures "$W/run.json")
  CLK=$(getconf CLK_TCK)
  # CPU per process as a rate over the window, per post at the run's post rate; then the line
  # columns after the joins: name cpu0 cpu1 idle0 idle1 [jit0 jit1]
  CPU=$(join <(sort "$W/cpu0") <(sort "$W/cpu1") | join - <(join <(sort "$W/idle0") <(sort "$W/idle1")) |
        join -a 1 - <(join <(sort "$W/jit0") <(sort "$W/jit1")) |
        awk -v clk="$CLK" -v posts="$POSTS" -v secs="$SECS" -v n="$n" -v t0="$T0" -v t1="$T1" -v i0="$I0" -v i1="$I1" '
    function per_post(c) { return (posts > 0) ? c / (posts / secs) * 1e6 : 0 }
    { d = ($3 - $2) / clk; c = d / (t1 - t0); ic = ($5 - $4) / clk / (i1 - i0); tot += d; mtot += c - ic; name = $1
      jit = (NF >= 7) ? sprintf(" jit_cores=%.2f", ($7 - $6) / clk / (t1 - t0)) : ""
      if (name ~ /^instance-/) { inst += d; iidle += ic }
      printf "feed_scale_cpu instances=%d process=%s cpu_s=%.2f cores=%.2f us_per_post=%.1f idle_cores=%.3f marginal_us_per_post=%.1f%s\n", n, name, d, c, per_post(c), ic, per_post(c - ic), jit }
    END { ic = inst / (t1 - t0)
          printf "feed_scale_cpu instances=%d process=all-instances cpu_s=%.2f cores=%.2f us_per_post=%.1f idle_cores=%.3f marginal_us_per_post=%.1f\n", n, inst, ic, per_post(ic), iidle, per_post(ic - iidle)
          printf "TOTAL %.1f %.2f %.1f\n", per_post(tot / (t1 - t0)), tot / (t1 - t0), per_post(mtot) }')
  read -r CPU_US CORES MARGINAL_US < <(awk '$1 == "TOTAL" { print $2, $3, $4 }' <<<"$CPU")
  # the load generator's JVM over the same window: not part of the cluster's figures, but what the 2 cores also carried
  CPU+=$'\n'$(join "$W/gen0" "$W/gen1" | awk -v clk="$CLK" -v posts="$POSTS" -v secs="$SECS" -v n="$n" -v t0="$T0" -v t1="$T1" '
    { c = ($3 - $2) / clk / (t1 - t0)
      printf "feed_scale_cpu instances=%d process=generator cpu_s=%.2f cores=%.2f us_per_post=%.1f (not in the cluster figures)\n", n, ($3 - $2) / clk, c, (posts > 0) ? c / (posts / secs) * 1e6 : 0 }')
  grep -v '^TOTAL' <<<"$CPU"
  read -r FAN_P99 SEARCH_P99 PROBE_INFO < <(python3 -c '
import json, sys; p = json.load(open(sys.argv[1]))
print(p["fanout_p99"], p["search_p99"], "samples=%s unseen_in_30s=%s fanout_p50=%s fanout_max=%s search_p50=%s search_max=%s" % (
      p["samples"], p["unseen_in_30s"], p["fanout_p50"], p["fanout_max"], p["search_p50"], p["search_max"]))' "$W/probe.json")
  POSTS_S=$(awk -v p="$POSTS" -v s="$SECS" 'BEGIN { printf "%.0f", p / s }')
  log "instances=$n posts=$POSTS in ${SECS}s, post p99 ${POST_P99} ms, errors $ERRORS, cluster CPU $CORES cores, probe: $PROBE_INFO, load average before $LOAD_BEFORE, commit $COMMIT"
  LINE="feed_scale instances=$n posts_per_s=$POSTS_S p99_ms=$P99 fanout_lag_p99_ms=$FAN_P99 search_lag_p99_ms=$SEARCH_P99 cpu_us_per_post=$CPU_US marginal_cpu_us_per_post=$MARGINAL_US"
  SUMMARY+=("$LINE")
  if [ -n "$RESULTS" ]; then
    { echo "$(date -u +%FT%TZ) commit=$COMMIT users=$USERS duration_s=$DURATION warmup_s=$WARMUP loadavg_before=$LOAD_BEFORE errors=$ERRORS post_p99_ms=$POST_P99 cluster_cores=$CORES $PROBE_INFO"
      grep -v '^TOTAL' <<<"$CPU"; echo "$LINE"; } >>"$RESULTS"
  fi
done
# last: one line per instance count
printf '%s\n' "${SUMMARY[@]}"
