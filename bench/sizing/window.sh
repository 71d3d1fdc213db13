# bench/sizing/window.sh: sourced by the scripts that measure a running bin/herald-cluster in place
# (setting-ab.sh, timerslack-ab.sh, profile-window.sh).
#   cluster_of DIR      sets STATUS (`herald-cluster status`), INSTANCES (the instances' URLs), PROCS (name=pid of
#                       every server up) and HZ
#   pid_of NAME         the pid of server NAME in STATUS
#   posts               posts acknowledged so far, summed over the instances' /metrics
#   cpu                 "name ticks" lines: the CPU ticks of each of PROCS and its process tree
#   measure_window PREFIX SECONDS
#                       sleeps SECONDS and prints "PREFIX posts_per_s=<x> <process>_us_per_post=<x> ...
#                       all_us_per_post=<x> load=<x>" for that window
cluster_of() {
  STATUS=$("$ROOT/bin/herald-cluster" status --dir "$1")
  INSTANCES=$(awk '$1 == "instance" { print $3 }' <<<"$STATUS")
  PROCS=$(awk '$1 == "state" && $3 == "up" { sub("pid=", "", $5); print $2 "=" $5 }' <<<"$STATUS")
  HZ=$(getconf CLK_TCK)
}
pid_of() { awk -v n="$1" '$1 == "state" && $2 == n { sub("pid=", "", $5); print $5 }' <<<"$STATUS"; }
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
measure_window() {
  local p0 c0 t0 p1 c1 t1
  p0=$(posts); c0=$(cpu); t0=$(date +%s.%N)
  sleep "$2"
  p1=$(posts); c1=$(cpu); t1=$(date +%s.%N)
  python3 - "$1" "$p0" "$p1" "$t0" "$t1" "$HZ" "$(cut -d' ' -f1 /proc/loadavg)" "$c0" "$c1" <<'PY'
import sys
prefix, p0, p1, t0, t1, hz, load, c0, c1 = sys.argv[1:]
posts = int(p1) - int(p0); secs = float(t1) - float(t0)
a = dict(l.split() for l in c0.splitlines()); b = dict(l.split() for l in c1.splitlines())
line = f"{prefix} posts_per_s={posts / secs:.0f}"
tot = 0
for n in sorted(b):
    us = (int(b[n]) - int(a.get(n, b[n]))) / int(hz) * 1e6 / max(posts, 1); tot += us
    line += f" {n}_us_per_post={us:.0f}"
print(line + f" all_us_per_post={tot:.0f} load={load}")
PY
}
