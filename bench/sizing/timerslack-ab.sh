#!/usr/bin/env bash
# bench/sizing/timerslack-ab.sh: the Linux timer slack of one server's threads, A/B on a running, warm cluster under
# load (no restart: the JVM's JIT stays warm). Alternates the slack of every thread of SERVER between the values
# given (writes /proc/TID/timerslack_ns; threads made later inherit their creator's), and for each window prints the
# CPU of every cluster process per post (posts counted by the instances' /metrics) and the posts per second:
#   bench/sizing/timerslack-ab.sh DIR SERVER [SECONDS=30] [ROUNDS=3] [SLACKS="50000 500000"]
# DIR is a bin/herald-cluster directory that is up and under load (e.g. `herald-load feed` through its balancer).
# Each window starts SETTLE (5) seconds after the switch. One line per window:
#   timerslack server=<s> slack_ns=<n> round=<r> posts_per_s=<x> <process>_us_per_post=<x> ... all_us_per_post=<x> load=<x>
# Root (or the server's user) is needed to write another process's timer slack. The last value of SLACKS stays set.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$1 SERVER=$2 SECS=${3:-30} ROUNDS=${4:-3} SLACKS=${SLACKS:-${5:-"50000 500000"}} SETTLE=${SETTLE:-5}
status=$("$ROOT/bin/herald-cluster" status --dir "$DIR")
PID=$(awk -v n="$SERVER" '$1 == "state" && $2 == n { sub("pid=", "", $5); print $5 }' <<<"$status")
[ -n "$PID" ] || { echo "no process $SERVER in $DIR" >&2; exit 1; }
INSTANCES=$(awk '$1 == "instance" { print $3 }' <<<"$status")
PROCS=$(awk '$1 == "state" && $3 == "up" { sub("pid=", "", $5); print $2 "=" $5 }' <<<"$status")
posts() { for u in $INSTANCES; do curl -s "$u/metrics"; done |
  awk '/^herald_feed_requests_total\{entity="outbound",operation="post",status="200"\}/ { n += $NF } END { print n + 0 }'; }
# CPU ticks of each process and its descendants (PostgreSQL's backends): "name ticks" lines
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
set_slack() { for t in /proc/"$PID"/task/*; do echo "$1" >"/proc/${t##*/}/timerslack_ns" 2>/dev/null || true; done; }
HZ=$(getconf CLK_TCK)
for r in $(seq 1 "$ROUNDS"); do
  for s in $SLACKS; do
    set_slack "$s"; sleep "$SETTLE"
    p0=$(posts); c0=$(cpu); t0=$(date +%s.%N)
    sleep "$SECS"
    p1=$(posts); c1=$(cpu); t1=$(date +%s.%N)
    python3 - "$SERVER" "$s" "$r" "$p0" "$p1" "$t0" "$t1" "$HZ" "$(cut -d' ' -f1 /proc/loadavg)" "$c0" "$c1" <<'PY'
import sys
server, slack, r, p0, p1, t0, t1, hz, load, c0, c1 = sys.argv[1:]
posts = int(p1) - int(p0); secs = float(t1) - float(t0)
a = dict(l.split() for l in c0.splitlines()); b = dict(l.split() for l in c1.splitlines())
line = f"timerslack server={server} slack_ns={slack} round={r} posts_per_s={posts / secs:.0f}"
tot = 0
for n in sorted(b):
    us = (int(b[n]) - int(a.get(n, b[n]))) / int(hz) * 1e6 / max(posts, 1); tot += us
    line += f" {n}_us_per_post={us:.0f}"
print(line + f" all_us_per_post={tot:.0f} load={load}")
PY
  done
done
