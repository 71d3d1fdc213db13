#!/usr/bin/env python3
"""bench/sizing/threads.py: where a JVM server's CPU goes, by thread pool, over a window of a running workload.

Takes two `jcmd PID Thread.print` snapshots SECONDS apart (each thread's `cpu=` since its start; JDK 11+), subtracts
them by native thread id, groups threads by their name at the end with the digits taken out ("MutationStage-3" -> "MutationStage-#",
"opensearch[n][search][T#2]" -> "opensearch[n][search][T##]"), and prints one line per group, largest first, and the
process total from /proc/PID/stat (the difference is threads that ended in the window, native threads jcmd does
not list, and the seconds jcmd itself takes). Cassandra's request threads are one shared pool whose threads take
the name of the stage they run (MutationStage, Native-Transport-Requests, ReadStage): their split by name is only
roughly right; a profile (async-profiler) splits them exactly. With COUNTS_BEFORE/COUNTS_AFTER nothing else: pair it with the workload's own counts
(posts, searches) to turn seconds into microseconds per operation.

  python3 bench/sizing/threads.py PID SECONDS [JCMD]     (JCMD: the jcmd of the server's JDK, default `jcmd`)

Prints `threads group=<name> cpu_ms=<n> share=<x>` lines, then `threads total_cpu_ms=<n> listed_ms=<n> wall_s=<x>`.
"""
import os, re, subprocess, sys, time

def snapshot(jcmd, pid):
    out = subprocess.run([jcmd, str(pid), "Thread.print"], capture_output=True, text=True, check=True).stdout
    cpu = {}   # native thread id -> (name, cpu ms since the thread started)
    for m in re.finditer(r'^"(.*?)".*?\bcpu=([0-9.]+)ms.*?\bnid=(\w+)', out, re.M):
        cpu[m.group(3)] = (m.group(1), float(m.group(2)))
    return cpu

def ticks(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")

def group(name):
    return re.sub(r"\d+", "#", name)

def main():
    pid, secs = int(sys.argv[1]), float(sys.argv[2])
    jcmd = sys.argv[3] if len(sys.argv) > 3 else "jcmd"
    a, ta, t0 = snapshot(jcmd, pid), ticks(pid), time.time()
    time.sleep(secs)
    b, tb, t1 = snapshot(jcmd, pid), ticks(pid), time.time()
    groups = {}
    for nid, (name, ms) in b.items():
        groups[group(name)] = groups.get(group(name), 0.0) + ms - a.get(nid, ("", 0.0))[1]
    listed = sum(groups.values())
    total = tb - ta
    for g, ms in sorted(groups.items(), key=lambda kv: -kv[1]):
        if ms >= 1.0:
            print(f"threads group={g.replace(' ', '_')} cpu_ms={ms:.0f} share={ms / total if total else 0:.3f}")
    print(f"threads total_cpu_ms={total:.0f} listed_ms={listed:.0f} wall_s={t1 - t0:.1f}")

if __name__ == "__main__":
    main()
