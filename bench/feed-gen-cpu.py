#!/usr/bin/env python3
"""The load generator's own CPU per request in a `herald-load feed` run against a feed already running.

usage: bench/feed-gen-cpu.py LABEL JAR PORT RATE|none [DURATION_S=40] [WARMUP_S=20]

Runs JAR (a herald-load.jar) with --users 32 --search-share 0.1 --progress json (and --rate-cap RATE unless
`none`), reads the generator JVM's utime+stime from /proc/PID/stat when its 2nd interval line arrives and again
at interval line DURATION-2 (the run's end and the summary left out), and divides by the responses counted in
the intervals between. JVM flags: GEN_OPTS (default -Xmx1g -XX:+UseParallelGC). Prints one line with the load
average; run it under `flock -o /work/notes/bench.lock` and alternate builds (bench/results/load.md)."""
import json, os, subprocess, sys, time

label, jar, port, rate = sys.argv[1:5]
duration = int(sys.argv[5]) if len(sys.argv) > 5 else 40
warmup = int(sys.argv[6]) if len(sys.argv) > 6 else 20
first, last = 2, duration - 2
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
java = subprocess.check_output([os.path.join(root, "build", "find-jdk.sh")], text=True).strip() + "/bin/java"
opts = os.environ.get("GEN_OPTS", "-Xmx1g -XX:+UseParallelGC").split()
cmd = [java, *opts, "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow", "-jar", jar,
       "feed", "--host", "127.0.0.1", "--port", port, "--users", "32", "--search-share", "0.1",
       "--duration", str(duration), "--warmup", str(warmup), "--progress", "json"] + \
      ([] if rate == "none" else ["--rate-cap", rate])
tick = os.sysconf("SC_CLK_TCK")


def cpu(pid):
    """utime + stime of process `pid` in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick


p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
n, c1, c2, reqs, errs, total, t1, t2 = 0, None, None, 0, 0, None, None, None
for line in p.stdout:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("type") == "interval":
        n += 1
        if n == first:
            c1, t1 = cpu(p.pid), time.time()
        elif first < n <= last:
            reqs += m["count"]
            errs += m["errors"]
            if n == last:
                c2, t2 = cpu(p.pid), time.time()
    elif m.get("type") == "summary":
        total = m["requests"]
if p.wait() != 0 or c2 is None or reqs == 0:
    sys.exit(f"{label}: the run failed or was too short (exit {p.returncode}, {n} intervals)")
load = "/".join(open("/proc/loadavg").read().split()[:3])
print(f"{label} gen_cpu_us_per_req={(c2 - c1) / reqs * 1e6:.1f} cpu_s={c2 - c1:.2f} reqs={reqs} wall_s={t2 - t1:.1f} "
      f"rps={reqs / (t2 - t1):.1f} errors={errs} total={total} load={load} at={time.strftime('%H:%M:%S', time.gmtime())}",
      flush=True)
