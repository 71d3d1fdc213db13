#!/usr/bin/env python3
"""bench/sizing/page-reads.py: feed instance and Cassandra CPU per inbound page GET, a full page against an empty one.

    python3 bench/sizing/page-reads.py PORT INSTANCE_PID CASSANDRA_PID FULL_ID EMPTY_ID N

On a bin/herald-cluster with no load running: N sequential keep-alive GETs of /participant/FULL_ID/inbound?limit=50,
then N of EMPTY_ID's (an empty inbound feed), three rounds; CPU from /proc/PID/stat of the instance (PORT is its
own port) and of the Cassandra node over each run. Prints `reads page=full|0 n=<n> bytes=<page bytes>
seconds=<s> instance_us_per_read=<x> cassandra_us_per_read=<x> load=<x>` lines; the processes' idle CPU is in the
figures (subtract cores x seconds / n). The per-item slope and the empty page's cost give the sizing's
instance_read_us and cassandra_query_read_us at page_size (docs/feed-sizing.md, section 2.3).
Python 3 standard library only.
"""
import http.client, os, sys, time
port, inst, cass, full, empty, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6])
hz = os.sysconf("SC_CLK_TCK")
def ticks(p):
    f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])
c = http.client.HTTPConnection("127.0.0.1", int(port))
def run(pid_, label):
    t0 = time.time(); i0, c0 = ticks(inst), ticks(cass); items = 0
    for _ in range(n):
        c.request("GET", f"/participant/{pid_}/inbound?limit=50"); r = c.getresponse(); b = r.read()
    s = time.time() - t0
    di, dc = ticks(inst) - i0, ticks(cass) - c0
    print(f"reads page={label} n={n} bytes={len(b)} seconds={s:.1f} instance_us_per_read={di/hz*1e6/n:.0f} cassandra_us_per_read={dc/hz*1e6/n:.0f} load={open('/proc/loadavg').read().split()[0]}", flush=True)
for r in range(3):
    run(full, "full"); run(empty, "0")
