#!/usr/bin/env bash
# bench/sizing/setting-ab.sh: a setting that can change in place (an OpenSearch index setting, a thread attribute),
# A/B on a running, warm cluster under load (no restart: every JVM's JIT stays warm). Runs each variant's shell
# command in turn (the variants alternate, ROUNDS times), waits SETTLE (10) seconds, then measures SECONDS: the CPU of
# every cluster process (process trees) per post (posts counted by the instances' /metrics) and the posts per second:
#   bench/sizing/setting-ab.sh DIR SECONDS ROUNDS NAME=COMMAND [NAME=COMMAND ...]
# DIR is a bin/herald-cluster directory that is up and under load (e.g. `herald-load feed` through its balancer);
# each COMMAND runs with DIR's cluster.env in its environment (OPENSEARCH_PORT, ...). One line per window:
#   setting variant=<name> round=<r> posts_per_s=<x> <process>_us_per_post=<x> ... all_us_per_post=<x> load=<x>
# The last variant's setting stays in place. bench/sizing/timerslack-ab.sh is the timer-slack special case.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$1 SECS=$2 ROUNDS=$3; shift 3
SETTLE=${SETTLE:-10}
set -a; . "$DIR/cluster.env"; set +a
status=$("$ROOT/bin/herald-cluster" status --dir "$DIR")
INSTANCES=$(awk '$1 == "instance" { print $3 }' <<<"$status")
PROCS=$(awk '$1 == "state" && $3 == "up" { sub("pid=", "", $5); print $2 "=" $5 }' <<<"$status")
posts() { for u in $INSTANCES; do curl -s "$u/metrics"; done |
  awk '/^herald_feed_requests_total\{entity="outbound",operation="post",status="200"\}/ { n += $NF } END { print n + 0 }'; }
cpu() { python3 -c '
import os, sys
stat = {}
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
            stat[int(p)] = (int(f[1]), int(f[11]) + int(f[12]), int(f[13]) + int(f[14]))
        except OSError:
            pass
kids = {}
for p, (pp, _, _) in stat.items(): kids.setdefault(pp, []).append(p)
def tree(p): return stat.get(p, (0, 0, 0))[1] + sum(tree(c) for c in kids.get(p, []))
for a in sys.argv[1:]:   # the root also counts its children that ended (PostgreSQL backends come and go)
    n, p = a.split("=")
    print(n, tree(int(p)) + stat.get(int(p), (0, 0, 0))[2])' $PROCS; }
HZ=$(getconf CLK_TCK)
for r in $(seq 1 "$ROUNDS"); do
  for v in "$@"; do
    name=${v%%=*} cmd=${v#*=}
    bash -c "$cmd" >/dev/null; sleep "$SETTLE"
    p0=$(posts); c0=$(cpu); t0=$(date +%s.%N)
    sleep "$SECS"
    p1=$(posts); c1=$(cpu); t1=$(date +%s.%N)
    python3 - "$name" "$r" "$p0" "$p1" "$t0" "$t1" "$HZ" "$(cut -d' ' -f1 /proc/loadavg)" "$c0" "$c1" <<'PY'
import sys
name, r, p0, p1, t0, t1, hz, load, c0, c1 = sys.argv[1:]
posts = int(p1) - int(p0); secs = float(t1) - float(t0)
a = dict(l.split() for l in c0.splitlines()); b = dict(l.split() for l in c1.splitlines())
line = f"setting variant={name} round={r} posts_per_s={posts / secs:.0f}"
tot = 0
for n in sorted(b):
    us = (int(b[n]) - int(a.get(n, b[n]))) / int(hz) * 1e6 / max(posts, 1); tot += us
    line += f" {n}_us_per_post={us:.0f}"
print(line + f" all_us_per_post={tot:.0f} load={load}")
PY
  done
done
