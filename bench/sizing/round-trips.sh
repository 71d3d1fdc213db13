#!/usr/bin/env bash
# bench/sizing/round-trips.sh: how many requests the feed instances send to each server, per post, on a running
# bin/herald-cluster under load. Reads the kernel's TCP counters of every socket of every instance (`ss -tin`:
# data_segs_out, data_segs_in: segments that carried data, i.e. about one per request written and one per answer
# read; pipelined requests written together count once, a request larger than the MSS (32-64 KiB on loopback) more
# than once) at the start and end of a window, groups them by the server's port (DIR/cluster.env) and divides by
# the posts acknowledged in the window (the instances' /metrics):
#   bench/sizing/round-trips.sh DIR [SECONDS=20]
# One line per server, then the posts and all requests of the window:
#   round_trips server=<name> segs_out_per_post=<x> segs_in_per_post=<x> kib_out_per_post=<x> kib_in_per_post=<x>
#   round_trips posts=<n> requests=<n> seconds=<x> load=<x>
# Sockets opened and closed inside the window are not seen (pools keep theirs; the feed's clients all pool).
# Each request of the mix is counted, not only posts: run a post-only load (or read the mix's shares) to split them.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$1 SECS=${2:-20}
# shellcheck disable=SC1091
. "$DIR/cluster.env"
status=$("$ROOT/bin/herald-cluster" status --dir "$DIR")
PIDS=$(awk '$1 == "state" && $2 ~ /^instance-/ && $3 == "up" { sub("pid=", "", $5); print $5 }' <<<"$status")
URLS=$(awk '$1 == "instance" { print $3 }' <<<"$status")
PORTS="kafka=$KAFKA_PORT postgres=$PG_PORT redis=$REDIS_PORT cassandra=$CASSANDRA_PORT opensearch=$OPENSEARCH_PORT"
counts() { # "port local-socket data_segs_out data_segs_in bytes_sent bytes_received" per socket of the instances
  ss -tinpH | python3 -c '
import re, sys
pids = set(sys.argv[1].split()); lines = sys.stdin.read().splitlines()
for i, l in enumerate(lines):
    m = re.search(r"pid=(\d+)", l)
    if not m or m.group(1) not in pids or i + 1 >= len(lines): continue
    f = l.split(); local, peer = f[3], f[4]; info = lines[i + 1]
    g = lambda k: int((re.search(k + r":(\d+)", info) or [0, 0])[1])
    print(peer.rsplit(":", 1)[1], local, g("data_segs_out"), g("data_segs_in"), g("bytes_sent"), g("bytes_received"))' "$PIDS"; }
metric() { for u in $URLS; do curl -s "$u/metrics"; done | awk -v re="$1" '$0 ~ re { n += $NF } END { printf "%d\n", n }'; }
posts() { metric '^herald_feed_requests_total\\{entity="outbound",operation="post",status="200"\\}'; }
requests() { metric '^herald_feed_requests_total\\{'; }
c0=$(counts); p0=$(posts); r0=$(requests); t0=$(date +%s.%N)
sleep "$SECS"
c1=$(counts); p1=$(posts); r1=$(requests); t1=$(date +%s.%N)
python3 - "$PORTS" "$((p1 - p0))" "$((r1 - r0))" "$t0" "$t1" "$(cut -d' ' -f1 /proc/loadavg)" "$c0" "$c1" <<'PY'
import sys
ports, posts, reqs, t0, t1, load, c0, c1 = sys.argv[1:]
names = {p: n for n, p in (x.split("=") for x in ports.split())}
def parse(s):
    return {(f[0], f[1]): list(map(int, f[2:])) for f in (l.split() for l in s.splitlines()) if len(f) == 6}
a, b = parse(c0), parse(c1)
posts = int(posts); tot = {}
for k, v in b.items():
    if k[0] not in names: continue
    base = a.get(k, [0, 0, 0, 0])          # a socket opened in the window counts from 0
    t = tot.setdefault(names[k[0]], [0, 0, 0, 0])
    for i in range(4): t[i] += v[i] - base[i]
for n in sorted(tot):
    o, i, bo, bi = tot[n]; d = max(posts, 1)
    print(f"round_trips server={n} segs_out_per_post={o / d:.2f} segs_in_per_post={i / d:.2f} "
          f"kib_out_per_post={bo / d / 1024:.2f} kib_in_per_post={bi / d / 1024:.2f}")
print(f"round_trips posts={posts} requests={reqs} seconds={float(t1) - float(t0):.1f} load={load}")
PY
