#!/usr/bin/env python3
"""bench/sizing/opensearch-search.py: OpenSearch CPU per search of the feed's shape (herald.feed.store.opensearch.schema
search-page-body: one dictionary word, 100 hits, newest first, `from`/`ts`/`id` doc values), by body variant,
alternating on one warm node that holds the feed's index (a bin/herald-cluster under `herald-load feed`).

Variants: `source-false` (the body before 2026-11-26: `_source: false`, so the fetch phase still reads each hit's
stored `_id`, decompressing its stored-fields block), `stored-none` (`stored_fields: _none_`: no stored field is read,
the doc values only). CPU is read from /proc for the node's search and HTTP (transport_worker) threads only (found with
jcmd Thread.print), so the cluster's own indexing does not count; the workload's few searches do (a few per second).

  python3 bench/sizing/opensearch-search.py OPENSEARCH_PID URL [ROUNDS=4] [SEARCHES=400] [INDEX=herald-posts]

Prints `opensearch_search variant=<v> searches=<n> cpu_ms=<n> us_per_search=<x> hits=<n> load=<x>` per round.
"""
import glob, json, os, random, re, subprocess, sys, time, urllib.request

pid, url = int(sys.argv[1]), sys.argv[2].rstrip("/")
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 4
n = int(sys.argv[4]) if len(sys.argv) > 4 else 400
index = sys.argv[5] if len(sys.argv) > 5 else "herald-posts"
jcmd = os.environ.get("JCMD") or (glob.glob("/usr/lib/jvm/*17*/bin/jcmd") + ["jcmd"])[0]
hz = os.sysconf("SC_CLK_TCK")

def call(path, body=None):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"content-type": "application/json"}, method="POST" if body is not None else "GET")
    with urllib.request.urlopen(req) as r:
        return json.load(r)

def threads():
    out = subprocess.run([jcmd, str(pid), "Thread.print"], capture_output=True, text=True, check=True).stdout
    return [int(m.group(2), 16) for m in re.finditer(r'^"([^"]*)".*?nid=(0x[0-9a-f]+)', out, re.M)
            if "][search][" in m.group(1) or "][transport_worker][" in m.group(1)]

def ticks(tids):
    t = 0
    for tid in tids:
        try:
            f = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
            t += int(f[11]) + int(f[12])
        except OSError:
            pass
    return t

def body(variant, word):
    b = {"size": 101, "track_total_hits": False, "_source": False, "docvalue_fields": ["from", "ts", "id"],
         "sort": [{"ts": "desc"}, {"id": "desc"}],
         "query": {"bool": {"filter": [{"match": {"text": {"query": word, "operator": "and", "zero_terms_query": "none"}}}]}}}
    if variant == "stored-none":
        b["stored_fields"] = "_none_"
    return b

docs = call(f"/{index}/_search", {"size": 300, "_source": ["story"], "query": {"match_all": {}}})["hits"]["hits"]
words = sorted({w for d in docs for w in d.get("_source", {}).get("story", "").split()})
rnd = random.Random(7)
path = f"/{index}/_search?filter_path=hits.hits.fields"
for v in ["source-false", "stored-none"]:  # warm both paths
    for _ in range(100):
        call(path, body(v, rnd.choice(words)))
for r in range(rounds):
    for v in (["source-false", "stored-none"] if r % 2 == 0 else ["stored-none", "source-false"]):
        tids = threads()
        c0, hits = ticks(tids), 0
        for _ in range(n):
            hits += len(call(path, body(v, rnd.choice(words))).get("hits", {}).get("hits", []))
        cpu_ms = (ticks(tids) - c0) * 1000.0 / hz
        load = open("/proc/loadavg").read().split()[0]
        print(f"opensearch_search variant={v} searches={n} cpu_ms={cpu_ms:.0f} us_per_search={cpu_ms * 1000 / n:.0f} hits={hits} load={load}", flush=True)
