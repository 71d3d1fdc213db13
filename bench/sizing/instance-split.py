#!/usr/bin/env python3
"""bench/sizing/instance-split.py: a feed instance's CPU profile split into the sizing model's operations.

    python3 bench/sizing/instance-split.py DIR/profile-instance-1-LABEL.collapsed

Input: the collapsed stacks of `bench/sizing/profile-window.sh DIR instance-1 SECONDS LABEL` (async-profiler, one
thread name per stack). Every sample goes to one part by its thread and, on the virtual threads' carriers, by the
handler on its stack:

  post, befriend, create, search, get_inbound, get_outbound, get_friends, get_other (the handlers, on ForkJoinPool
  workers); producer (the instance's Kafka producer: the posts' appends); fanout (the fan-out job's stream thread);
  index (the index job's stream thread and the OpenSearch client's HttpClient threads: bulks, and the searches'
  small answers); cassandra_io (the driver's I/O threads: the author copy on the request path and the fan-out's
  batches); per_request (the HTTP I/O threads and the per-minute job: its sender, stream thread, producer and
  minutes; also the request middleware on a carrier outside any handler); vthreads (the virtual threads' scheduling:
  carriers mounting, unmounting and parking them, the I/O poller, the delay scheduler: the handlers' overhead);
  jit (C1/C2); shared (the rest: GC, VM threads).

Prints `split part=<p> share=<x> samples=<n>` for every part as a share of the non-JIT samples, then the JIT's
share of all samples. The per-operation costs are derived from these shares and the quiet run's CPU per post in
docs/feed-sizing.md, section 2.3; nothing here reads CPU time.
Python 3 standard library only.
"""
import re
import sys

HANDLERS = [("post", "handlers$post_outbound"), ("befriend", "handlers$post_friend"),
            ("create", "handlers$create_participant"), ("search", "handlers$search_outbound"),
            ("get_inbound", "handlers$get_inbound"), ("get_outbound", "handlers$get_outbound"),
            ("get_friends", "handlers$get_friends"), ("get_other", "herald/feed/handlers$get_"),
            ("per_request", "herald/feed/handlers$"), ("per_request", "herald/feed/routes$")]
THREADS = [("jit", r"CompilerThre"), ("producer", r"kafka-producer-network-thread \| herald-feed-\d"),
           ("fanout", r"herald-fan-out-.*StreamThread"), ("index", r"herald-index-.*StreamThread|HttpClient-"),
           ("cassandra_io", r"^s\d+-(io|timer)-"),
           ("per_request", r"herald-http-io|herald-perf-|herald-feed-perf-|\| herald-perf-"),
           ("vthreads", r"MasterPoller|delayScheduler|VirtualThread-unblocker")]


def part_of(stack):
    thread = stack.split(";", 1)[0].strip("[]")
    if thread.startswith("ForkJoinPool-") and "worker" in thread:
        for name, frame in HANDLERS:
            if frame in stack:
                return name
        return "vthreads"
    for name, pat in THREADS:
        if re.search(pat, thread):
            return name
    return "shared"


def main():
    path = sys.argv[1]
    counts = {}
    with open(path) as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            if stack:
                p = part_of(stack)
                counts[p] = counts.get(p, 0) + int(n)
    nojit = sum(v for k, v in counts.items() if k != "jit")
    for k in sorted(counts, key=lambda k: -counts[k]):
        if k != "jit":
            print("split part=%s share=%.4f samples=%d" % (k, counts[k] / nojit, counts[k]))
    print("split jit_share_of_all=%.4f samples=%d" % (counts.get("jit", 0) / sum(counts.values()), sum(counts.values())))


if __name__ == "__main__":
    main()
