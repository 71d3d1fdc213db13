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
import http.client
import os
import sys
import time


def ticks(pid):
    """CPU ticks (user + system, all threads) of process pid."""
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def run(conn, inst, cass, participant, label, n):
    """n sequential GETs of participant's inbound page; prints one reads line."""
    hz = os.sysconf("SC_CLK_TCK")
    t0, i0, c0 = time.time(), ticks(inst), ticks(cass)
    body = b""
    for _ in range(n):
        conn.request("GET", "/participant/%s/inbound?limit=50" % participant)
        body = conn.getresponse().read()
    secs, di, dc = time.time() - t0, ticks(inst) - i0, ticks(cass) - c0
    print("reads page=%s n=%d bytes=%d seconds=%.1f instance_us_per_read=%.0f cassandra_us_per_read=%.0f load=%s" % (
        label, n, len(body), secs, di / hz * 1e6 / n, dc / hz * 1e6 / n, open("/proc/loadavg").read().split()[0]),
        flush=True)


def main():
    port, inst, cass, full, empty, n = sys.argv[1:7]
    conn = http.client.HTTPConnection("127.0.0.1", int(port))
    for _ in range(3):
        run(conn, int(inst), int(cass), full, "full", int(n))
        run(conn, int(inst), int(cass), empty, "0", int(n))


if __name__ == "__main__":
    main()
