#!/usr/bin/env python3
"""Pools bench/http.sh's tail rounds across runs: the median p99.9 and p99.99 of every server's rounds at one rate.

On a shared virtual machine one run's three rounds cannot rank two servers by their tail (their ratio moved from
0.27 to 4.1 between runs of the same build on the 2026-11-27 machine); the rows of results/http-tail.csv from
several runs can. Only plain rounds count: ParallelGC (or --gc), no extra server flags (a TAIL_FLAGSETS A/B).

usage: bench/tail-pool.py --rate N [--since 2026-11-27T02] [--until ...] [--gc ParallelGC] [--csv FILE]
prints a `tail_pool server=<s> rounds=<n> p999_ms=<median> p9999_ms=<median> p999_range_ms=<lo>-<hi>` line per
server and `tail_pool_ratio server=<s> p999=<x> p9999=<x>` against raw Netty's medians.
"""
import argparse
import csv
import os
import statistics
import sys


def pooled(rows, rate, since, until, gc):
    out = {}
    for r in rows:
        if r.get("rate") != str(rate) or r.get("gc") != gc or (r.get("server_flags") or "").strip():
            continue
        ts = r.get("timestamp", "")
        if (since and ts < since) or (until and ts >= until):
            continue
        try:
            out.setdefault(r["server"], []).append((float(r["p999_ms"]), float(r["p9999_ms"])))
        except (KeyError, ValueError):
            continue
    return out


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=int, required=True, help="the tail rate (req/s) of the rounds to pool")
    p.add_argument("--since", default="", help="first timestamp (prefix compare, e.g. 2026-11-27T02)")
    p.add_argument("--until", default="", help="timestamps before this only")
    p.add_argument("--gc", default="ParallelGC")
    p.add_argument("--csv", default=os.path.join(here, "results", "http-tail.csv"))
    a = p.parse_args(argv)
    with open(a.csv, newline="") as f:
        groups = pooled(csv.DictReader(f), a.rate, a.since, a.until, a.gc)
    if not groups:
        sys.exit(f"tail-pool: no rounds at rate {a.rate} under {a.gc} in {a.csv}")
    med = {}
    for s in sorted(groups):
        v = groups[s]
        m999 = statistics.median(x for x, _ in v)
        m9999 = statistics.median(y for _, y in v)
        med[s] = (m999, m9999)
        lo, hi = min(x for x, _ in v), max(x for x, _ in v)
        print(f"tail_pool server={s} rate={a.rate} rounds={len(v)} p999_ms={m999:.1f} p9999_ms={m9999:.1f} "
              f"p999_range_ms={lo:.1f}-{hi:.1f}")
    if "netty" in med:
        n999, n9999 = med["netty"]
        for s in sorted(med):
            if s != "netty":
                print(f"tail_pool_ratio server={s} p999={med[s][0] / n999:.2f} p9999={med[s][1] / n9999:.2f} "
                      "(of raw Netty's pooled medians; target <= 1.1)")


if __name__ == "__main__":
    main(sys.argv[1:])
