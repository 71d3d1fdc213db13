#!/usr/bin/env python3
"""bench/sizing/sizing.py: the feed's sizing model for 10M and 100M participants, checked by a small simulation.

    python3 bench/sizing/sizing.py                      # prints the lines below (~10 s of CPU)
    python3 bench/sizing/sizing.py --write bench/results/feed-sizing.md
    python3 bench/sizing/sizing.py --check docs/feed-sizing.md   # exit 1 unless the doc quotes these numbers
    python3 bench/sizing/sizing.py --fill docs/feed-sizing.md    # rewrite the doc's tables and quoted lines
    python3 bench/sizing/sizing.py --set cassandra_replica_write_us=120 --set instance_publish_us=90

Every input is in bench/sizing/params.json (value, kind, source); --set overrides one (JSON values).
Python 3 standard library only; deterministic (seeded).

1. A scaled-down synthetic graph (sim_participants, friends drawn from the power law truncated at
   degree_max_fraction of them, configuration model) lives through one day: active participants post and read
   (Poisson); each mode (push, pull, hybrid at every threshold) counts inbound rows, records, merges per read.
2. The same counts from the model's closed forms at that size are compared with the simulation (`check`), and
   both go through the cost function (`simcost`: CPU per process and bytes per post, simulated and modelled).
3. The closed forms at 10M and 100M (the tail recomputed for the full-size distribution) go through the same
   cost function (per process CPU, bytes, storage) to nodes and partitions: `breakeven` (push against pull
   per friend), `threshold` (the hybrid's sweep), `perpost`/`perread` (costs by process), `sizing` (the
   tables), `sensitivity` (one assumption changed at a time).
"""
import argparse, bisect, json, math, os, random, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
DAY = 86400.0


def load_params(overrides):
    with open(os.path.join(HERE, "params.json")) as f:
        raw = json.load(f)
    p = {k: v["value"] for k, v in raw.items() if not k.startswith("_")}
    for o in overrides:
        k, _, v = o.partition("=")
        if k not in p:
            sys.exit("unknown parameter " + k)
        p[k] = json.loads(v)
    return p, raw


# ---- the friends distribution: continuous power law on [kmin, kmax], degree = floor ----

class PowerLaw:
    def __init__(self, alpha, kmin, kmax):
        self.a, self.lo, self.hi = alpha, float(kmin), float(kmax)
        self.c = (alpha - 1) / (kmin ** (1 - alpha) - kmax ** (1 - alpha))  # pdf = c x^-alpha

    def sample(self, u):
        a, lo, hi = self.a, self.lo, self.hi
        return int((lo ** (1 - a) - u * (lo ** (1 - a) - hi ** (1 - a))) ** (1 / (1 - a)))

    def _int(self, p, x0, x1):  # integral of c x^(p - alpha) over [x0, x1]
        x0, x1 = max(x0, self.lo), min(x1, self.hi)
        if x1 <= x0:
            return 0.0
        e = p - self.a + 1
        return self.c * (x1 ** e - x0 ** e) / e

    def share_above(self, t):  # share of participants with more than t friends
        return self._int(0, t, self.hi)

    def mass(self, x0, x1):  # E[d ; x0 < d <= x1]
        return self._int(1, x0, x1)

    def mean(self):
        return self.mass(0, self.hi)


def poisson(r, mean):
    if mean <= 0:
        return 0
    l, k, prod = math.exp(-mean), 0, r.random()
    while prod > l:
        k += 1
        prod *= r.random()
    return k


def pct(pairs, q):
    """The q-quantile of values weighted by counts: pairs of (value, weight)."""
    pairs = sorted(pairs)
    total = sum(w for _, w in pairs)
    if total == 0:
        return 0
    acc, goal = 0, q * total
    for v, w in pairs:
        acc += w
        if acc >= goal:
            return v
    return pairs[-1][0]


def pull_p99_model(dist, q, rng, n=40000):
    """p99 over reads of the pulled friends a read merges, from the distribution: each reader's d friends are
    pulled with probability q (configuration model), binomial by its normal approximation."""
    ms = []
    for _ in range(n):
        d = dist.sample(rng.random())
        mu = d * q
        ms.append(max(0, round(mu + math.sqrt(max(mu * (1 - q), 0)) * rng.gauss(0, 1))))
    return pct([(m, 1) for m in ms], 0.99)


# ---- 1. the simulation at a scaled-down size ----

def simulate(p, thresholds):
    n, rng = int(p["sim_participants"]), random.Random(p["sim_seed"])
    dist = PowerLaw(p["degree_alpha"], p["degree_min"], p["degree_max_fraction"] * n)
    want = [dist.sample(rng.random()) for _ in range(n)]
    stubs = [v for v in range(n) for _ in range(want[v])]
    if len(stubs) % 2:
        stubs.pop()
    rng.shuffle(stubs)
    deg = [0] * n
    edges = []
    for i in range(0, len(stubs), 2):
        u, v = stubs[i], stubs[i + 1]
        if u != v:  # self-loops dropped; repeated pairs kept (a hub pair may meet twice: counted as two friends)
            edges.append((u, v))
            deg[u] += 1
            deg[v] += 1
    del stubs
    g = len(thresholds)
    binv = [bisect.bisect_left(thresholds, d) for d in deg]  # node v is pulled at thresholds[j] iff j < binv[v]
    cnt = [0] * (n * (g + 1))
    for u, v in edges:
        cnt[u * (g + 1) + binv[v]] += 1
        cnt[v * (g + 1) + binv[u]] += 1
    a, P, R = p["active_fraction"], p["posts_per_active_day"], p["inbound_reads_per_active_day"]
    posts, reads = [0] * n, [0] * n
    for v in range(n):
        if rng.random() < a:
            posts[v], reads[v] = poisson(rng, P), poisson(rng, R)
    out = {"n": n, "edges": len(edges), "mean_degree": 2.0 * len(edges) / n, "posts": sum(posts),
           "reads": sum(reads), "dist": dist, "modes": {}}
    chunk = p["fanout_chunk"]
    for j, t in [(-1, 0)] + list(enumerate(thresholds)) + [(g, None)]:
        # j = -1: pull everything; j = g: push everything
        rows = pulled = records = 0
        for v in range(n):
            if posts[v]:
                if j == g or (j >= 0 and deg[v] <= t):
                    rows += posts[v] * deg[v]
                    records += posts[v] * max(1, math.ceil(deg[v] / chunk))
                else:
                    pulled += posts[v]
                    records += posts[v]
        ms = []
        for v in range(n):
            if reads[v]:
                base = v * (g + 1)
                m = deg[v] if j == -1 else (0 if j == g else sum(cnt[base + j + 1: base + g + 1]))
                ms.append((m, reads[v]))
        merges = sum(m * w for m, w in ms)
        out["modes"][t if j not in (-1, g) else ("pull" if j == -1 else "push")] = {
            "rows": rows, "pulled_posts": pulled, "records": records, "merges": merges,
            "pull_p99": pct(ms, 0.99), "pull_p50": pct(ms, 0.5),
            "pulled_senders": n if j == -1 else (0 if j == g else sum(1 for d in deg if d > t)),
            "mean_degree": out["mean_degree"], "posts": out["posts"], "reads": out["reads"], "n": n}
    return out


# ---- 2. the model's counts per day for n participants ----

_P99 = {}


def p99_of(dist, q, rng, key):
    """pull_p99_model, memoised: it depends only on the distribution, the pulled share and the seed."""
    k = key + (dist.a, dist.lo, dist.hi, q)
    if k not in _P99:
        _P99[k] = pull_p99_model(dist, q, rng)
    return _P99[k]


def day_counts(p, n, t, p99=True):
    """Counts per day at size n for threshold t (0: pull everything; None: push everything); p99=False skips
    the sampled p99 of merges per read."""
    rng = random.Random("%s-%d-%s" % (p["sim_seed"], n, t))
    dist = PowerLaw(p["degree_alpha"], p["degree_min"], p["degree_max_fraction"] * n)
    a, P, R = p["active_fraction"], p["posts_per_active_day"], p["inbound_reads_per_active_day"]
    mean = dist.mean()
    posts, reads = n * a * P, n * a * R
    top = dist.hi if t is None else t
    chunk = p["fanout_chunk"]
    pushed_mass = dist.mass(0, top)
    # a pushed post to d friends is ceil(d / chunk) records: d / chunk + 1/2 on average above one chunk
    extra = 0.0 if top <= chunk else dist.mass(chunk, top) / chunk - 0.5 * (dist.share_above(chunk) - dist.share_above(top))
    pulled_share = dist.share_above(top) if t is not None else 0.0
    q = (mean - pushed_mass) / mean  # share of friend slots held by pulled senders
    if t == 0:
        q, pulled_share = 1.0, 1.0
    return {"n": n, "mean_degree": mean, "posts": posts, "reads": reads, "rows": posts * pushed_mass,
            "pulled_posts": posts * pulled_share, "pulled_senders": n * pulled_share,
            "records": posts * (1 + extra), "merges": reads * mean * q,
            "pull_p99": 0 if q == 0 or not p99 else p99_of(dist, q, rng, (n, t)), "q": q, "dist": dist}


# ---- 3. the cost function: counts per day -> CPU per process, bytes, nodes ----

def size(p, c, t):
    rf, peak, util = p["replication_factor"], p["peak_factor"], p["cpu_target_utilization"]
    n, a = c["n"], p["active_fraction"]
    ps = lambda per_day: per_day * peak / DAY  # peak rate per second
    cores = lambda us_per_day: us_per_day * peak / DAY / 1e6
    post_text = p["post_subject_bytes"] + p["post_story_bytes"]
    row_disk = (p["post_fixed_bytes"] + post_text + p["cassandra_row_overhead_bytes"]) * p["lz4_ratio"]
    by_ref = bool(p["inbound_by_reference"])
    # inbound rows of (recipient, ts, id, sender) only; a read takes the page's bodies from the body cache (Redis)
    inbound_row_disk = (p["post_fixed_bytes"] - 10 + p["cassandra_row_overhead_bytes"]) * p["lz4_ratio"] if by_ref else row_disk
    body_misses = c["reads"] * p["page_size"] * (1 - p["body_cache_hit_ratio"]) if by_ref else 0
    record_post = post_text + p["kafka_record_overhead_bytes"]
    others = n * a * (p["outbound_reads_per_active_day"] + p["friends_reads_per_active_day"]
                      + p["searches_per_active_day"] + p["befriends_per_active_day"]) \
        + n * p["new_participants_per_day_fraction"]
    requests = c["posts"] + c["reads"] + others
    hybrid = t not in (None, 0)
    # the hybrid head cache: each pulled sender's newest page of (ts, id, sender) + a day of its posts' bodies
    head_mb = (c["pulled_senders"] * p["page_size"] * 24 + c["pulled_posts"] * (post_text + 100)) / 1e6 if hybrid else 0
    cached = hybrid and head_mb <= p["head_cache_budget_mb"]
    r = {}
    # feed instances (depend on themselves through the head cache updates: two rounds)
    inst_base = (c["posts"] * p["instance_publish_us"] + c["reads"] * p["instance_read_us"]
                 + others * p["instance_other_request_us"] + c["rows"] * p["instance_fanout_row_us"]
                 + c["posts"] * p["instance_index_post_us"] + c["merges"] * p["instance_pull_merge_us"]
                 + (c["reads"] * p["instance_pull_friends_us"] if t is not None else 0))
    inst = max(3, math.ceil(cores(inst_base) / (p["instance_cores"] * util)))
    for _ in range(2):
        inst_us = inst_base + (c["pulled_posts"] * inst * p["instance_head_update_us"] if hybrid else 0)
        inst = max(3, math.ceil(cores(inst_us) / (p["instance_cores"] * util)))
    r["instances"], r["instance_cores"] = inst, cores(inst_us)
    # Kafka: post records (chunks carry the post again) + a request record per request
    rec_bytes = c["records"] * record_post + c["rows"] * 8
    req_bytes = requests * p["kafka_request_record_bytes"]
    fetched = c["records"] * (2 + (inst if hybrid else 0)) + requests
    kafka_us = (c["records"] + requests) * p["kafka_record_us"] + fetched * p["kafka_fetch_us"] \
        + (rec_bytes + req_bytes) / 1024 * p["kafka_kib_us"]
    mb_s = ps(rec_bytes + req_bytes) / 1e6
    parts = max(inst, math.ceil(2 * ps(c["rows"]) / p["fanout_task_rows_per_s"]))
    parts = 6 * math.ceil(parts / 6)
    brokers = max(3, math.ceil(mb_s / p["kafka_broker_mb_s"]),
                  math.ceil(cores(kafka_us) / (p["kafka_broker_cores"] * util)),
                  math.ceil((parts + inst) * rf / p["kafka_partitions_per_broker_max"]))
    r.update(kafka_cores=cores(kafka_us), kafka_mb_s=mb_s, kafka_partitions=parts, kafka_brokers=brokers,
             kafka_gb_day=(rec_bytes + req_bytes) * rf / 1e9)
    # Cassandra: cassandra_post_writes per post (the outbound row and the posts pointer at publish, post_recipients,
    # the job's rare second author copy) + one inbound row per pushed recipient
    writes = rf * (p["cassandra_post_writes"] * c["posts"] + c["rows"])
    # pulled friends whose heads are not in memory (pull everything; a hybrid whose head cache overflows): a page
    # read of each one's outbound partition per read
    uncached = c["merges"] if t is not None and not cached else 0
    page_reads = c["reads"] + n * a * p["outbound_reads_per_active_day"] + uncached
    point_reads = (c["pulled_posts"] * inst if cached else 0) + body_misses
    cass_us = writes * p["cassandra_replica_write_us"] + page_reads * p["cassandra_query_read_us"] \
        + point_reads * p["cassandra_point_read_us"]
    inbound_gb_day = c["rows"] * inbound_row_disk * rf / 1e9
    # the variant with inbound rows holding (recipient, ts, id, sender) only, the text read from the posts' bodies
    r["inbound_ref_gb_day"] = c["rows"] * (p["post_fixed_bytes"] - 10 + p["cassandra_row_overhead_bytes"]) * p["lz4_ratio"] * rf / 1e9
    # outbound row + posts pointer + post_recipients (a list of 8-byte ids of the pushed recipients, uncompressed)
    outbound_gb_day = (c["posts"] * (row_disk + 2 * (40 + p["cassandra_row_overhead_bytes"]) * p["lz4_ratio"])
                       + c["rows"] * 8) * rf / 1e9
    cass_tb = (inbound_gb_day * p["inbound_retention_days"] + outbound_gb_day * p["outbound_retention_days"]) / 1e3
    r.update(cassandra_cores=cores(cass_us), cassandra_writes_per_s=ps(writes), cassandra_tb=cass_tb,
             inbound_gb_day=inbound_gb_day, outbound_gb_day=outbound_gb_day,
             cassandra_nodes=max(3, math.ceil(cores(cass_us) / (p["cassandra_node_cores"] * util)),
                                 math.ceil(cass_tb / p["cassandra_max_data_tb"])))
    # OpenSearch: daily indices, 1 primary + (rf - 1) replicas; a search reads the newest day's primaries
    doc = p["opensearch_doc_bytes"]
    primary_gb_day = c["posts"] * doc / 1e9
    shards_day = max(1, math.ceil(primary_gb_day / p["opensearch_shard_gb"]))
    searches = n * a * p["searches_per_active_day"]
    os_us = c["posts"] * rf * p["opensearch_index_copy_us"] + searches * shards_day * p["opensearch_search_shard_us"]
    os_shards = shards_day * p["outbound_retention_days"] * rf
    os_tb = primary_gb_day * rf * p["outbound_retention_days"] / 1e3
    r.update(opensearch_cores=cores(os_us), search_gb_day=primary_gb_day * rf, opensearch_shards=os_shards,
             opensearch_shards_per_day=shards_day, opensearch_tb=os_tb,
             opensearch_nodes=max(3, math.ceil(cores(os_us) / (p["opensearch_node_cores"] * util)),
                                  math.ceil(os_tb / p["opensearch_max_data_tb"]),
                                  math.ceil(os_shards / p["opensearch_shards_per_node_max"])))
    # cache lookups: publish 2 (participant, friends), page reads 1 (+1 friends in the hybrid: who is pulled),
    # outbound 1, friends 2, befriend 2; misses go to PostgreSQL and put back
    lookups = c["posts"] * 2 + c["reads"] * (2 if t is not None else 1) + n * a * (
        p["outbound_reads_per_active_day"] + 2 * p["friends_reads_per_active_day"] + 2 * p["befriends_per_active_day"])
    misses = lookups * (1 - p["cache_hit_ratio"])
    pg_writes = n * a * p["befriends_per_active_day"] + n * p["new_participants_per_day_fraction"]
    pg_tb = (n * c["mean_degree"] / 2 * p["pg_bytes_per_friendship"] + n * p["pg_bytes_per_participant"]) / 1e12
    redis_ops = lookups + misses + n * a * p["befriends_per_active_day"] * 2 + (c["reads"] + body_misses if by_ref else 0)
    redis_gb = n * a * p["cache_window_fraction"] * (p["redis_bytes_per_participant"]
                                                     + c["mean_degree"] * p["redis_bytes_per_friend_entry"]) / 1e9 \
        + (c["posts"] * p["body_cache_days"] * (post_text + 200) / 1e9 if by_ref else 0)
    r.update(pg_cores=cores(misses * p["postgres_read_us"] + pg_writes * p["postgres_write_us"]),
             pg_queries_per_s=ps(misses + pg_writes), pg_tb=pg_tb, pg_shards=max(1, math.ceil(pg_tb / p["pg_max_data_tb"])),
             redis_cores=cores(redis_ops * p["redis_op_us"]), redis_gb=redis_gb,
             redis_shards=max(1, math.ceil(redis_gb / p["redis_shard_gb"]),
                              math.ceil(cores(redis_ops * p["redis_op_us"]) / util)))
    r["cores_total"] = sum(r[k] for k in ("instance_cores", "kafka_cores", "cassandra_cores", "opensearch_cores",
                                          "pg_cores", "redis_cores"))
    r["storage_gb_day"] = inbound_gb_day + outbound_gb_day + r["search_gb_day"] + r["kafka_gb_day"]
    r.update(head_cache_mb=head_mb, head_cached=cached, posts_per_s=c["posts"] / DAY, peak_posts_per_s=ps(c["posts"]),
             inbound_writes_per_s=ps(c["rows"]), peak_reads_per_s=ps(c["reads"]),
             merges_per_read=c["merges"] / c["reads"] if c["reads"] else 0, pull_p99=c["pull_p99"],
             pushed_row_share=c["rows"] / (c["posts"] * c["mean_degree"]) if c["posts"] else 0)
    return r


PROCESS_KEYS = ["instance_cores", "kafka_cores", "cassandra_cores", "opensearch_cores", "pg_cores", "redis_cores",
                "storage_gb_day"]


def unit_lines(p, n, mode, t):
    """CPU (us) by process and bytes stored (all copies) per post and per inbound page read: the cost function
    run on a day of posts only (no reads, no other requests) and on a day of reads only."""
    quiet = dict(p, outbound_reads_per_active_day=0, friends_reads_per_active_day=0, searches_per_active_day=0,
                 befriends_per_active_day=0, new_participants_per_day_fraction=0)
    out = []
    for what, q in [("perpost", dict(quiet, inbound_reads_per_active_day=0)),
                    ("perread", dict(quiet, posts_per_active_day=0))]:
        c = day_counts(q, n, t, p99=False)
        r = size(q, c, t)
        units = c["posts"] if what == "perpost" else c["reads"]
        us = lambda k: r[k] * 1e6 * DAY / q["peak_factor"] / units
        out.append("%s participants=%d mode=%s threshold=%s instance_us=%s kafka_us=%s cassandra_us=%s opensearch_us=%s "
                   "pg_us=%s redis_us=%s bytes_stored=%s" % (
                       what, n, mode, "none" if t is None else t, fmt(us("instance_cores")), fmt(us("kafka_cores")),
                       fmt(us("cassandra_cores")), fmt(us("opensearch_cores")), fmt(us("pg_cores")),
                       fmt(us("redis_cores")), fmt(r["storage_gb_day"] * 1e9 / units)))
    return out


def feasible(p, r, t):
    if t is None:
        return True
    return r["pull_p99"] <= p["pull_merge_p99_max"] and r["head_cached"]


def sweep(p, n):
    """[(threshold, size result)] over the grid, and the cheapest feasible threshold (None when none is)."""
    out = [(t, size(p, day_counts(p, n, t), t)) for t in [int(x) for x in p["thresholds"]]]
    ok = [(r["cores_total"], t) for t, r in out if feasible(p, r, t)]
    return out, (min(ok)[1] if ok else None)


# one assumption changed at a time, at the largest size: which ones move the answer
SENSITIVITY = [("cassandra_replica_write_us", 350), ("instance_publish_us", 1000), ("instance_fanout_row_us", 80),
               ("cassandra_query_read_us", 400),
               ("degree_alpha", 2.5), ("active_fraction", 0.5), ("inbound_reads_per_active_day", 60),
               ("posts_per_active_day", 5.0), ("inbound_retention_days", 7), ("head_cache_budget_mb", 4096),
               ("pull_merge_p99_max", 200)]


def fmt(x):
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if abs(x) >= 100:
        return str(int(round(x)))
    if abs(x) >= 10:
        return "%.1f" % x
    return "%.2f" % x


def run(p):
    thresholds = [int(t) for t in p["thresholds"]]
    lines, tables = [], {}
    sim = simulate(p, thresholds)
    # the model at the simulation's size, against the simulation (per post / per read: scale-free)
    for key, t in [("push", None), ("pull", 0)] + [(t, t) for t in thresholds if t < sim["dist"].hi]:
        s, m = sim["modes"][key], day_counts(p, sim["n"], t)
        lines.append("check n=%d mode=%s rows_per_post_sim=%s rows_per_post_model=%s merges_per_read_sim=%s "
                     "merges_per_read_model=%s pull_p99_sim=%d pull_p99_model=%d" % (
                         sim["n"], key if t in (None, 0) else "hybrid threshold=%d" % t,
                         fmt(s["rows"] / sim["posts"]), fmt(m["rows"] / m["posts"]),
                         fmt(s["merges"] / sim["reads"]), fmt(m["merges"] / m["reads"]), s["pull_p99"], m["pull_p99"]))
    # the cost function on the simulated counts and on the model's counts at the simulation's size
    for key, t in [("push", None), ("pull", 0)] + [(t, t) for t in thresholds if t < sim["dist"].hi]:
        cs, cm = sim["modes"][key], day_counts(p, sim["n"], t, p99=False)
        rs, rm = size(p, cs, t), size(p, cm, t)
        # per post of the day (all the day's work / its posts): scale-free, comparable at any size
        per = lambda r, c, k: r[k] * (1e6 if k.endswith("cores") else 1e9 / DAY * p["peak_factor"]) * DAY / p["peak_factor"] / c["posts"]
        lines.append("simcost n=%d mode=%s %s" % (sim["n"], key if t in (None, 0) else "hybrid threshold=%d" % t, " ".join(
            "%s_sim=%s %s_model=%s" % (k.replace("_cores", "_us_per_post").replace("storage_gb_day", "bytes_per_post"),
                                       fmt(per(rs, cs, k)),
                                       k.replace("_cores", "_us_per_post").replace("storage_gb_day", "bytes_per_post"),
                                       fmt(per(rm, cm, k))) for k in PROCESS_KEYS)))
    rf, a, P, R = p["replication_factor"], p["active_fraction"], p["posts_per_active_day"], p["inbound_reads_per_active_day"]
    c_row = p["instance_fanout_row_us"] + rf * p["cassandra_replica_write_us"]
    row_disk = (p["post_fixed_bytes"] + p["post_subject_bytes"] + p["post_story_bytes"]
                + p["cassandra_row_overhead_bytes"]) * p["lz4_ratio"]
    lines.append("breakeven push_us_per_row=%s push_us_per_friend_day=%s push_bytes_per_friend_day=%s "
                 "pull_cached_us_per_friend_day=%s pull_uncached_us_per_friend_day=%s" % (
                     fmt(c_row), fmt(P * c_row), fmt(P * row_disk * rf), fmt(a * R * p["instance_pull_merge_us"]),
                     fmt(a * R * (p["instance_pull_merge_us"] + p["cassandra_query_read_us"]))))
    for n in [int(x) for x in p["participants"]]:
        swept, best = sweep(p, n)
        for t, r in swept:
            lines.append("threshold participants=%d threshold=%d pushed_row_share=%s merges_per_read=%s pull_p99=%d "
                         "head_cache_mb=%s cores_total=%s feasible=%s" % (
                             n, t, fmt(r["pushed_row_share"]), fmt(r["merges_per_read"]), r["pull_p99"],
                             fmt(r["head_cache_mb"]), fmt(r["cores_total"]), fmt(feasible(p, r, t))))
        tables[n] = []
        for mode, t in [("push", None), ("hybrid", best)]:
            lines.extend(unit_lines(p, n, mode, t))
        pref = dict(p, inbound_by_reference=1)
        for mode, t in [("push", None), ("pull", 0), ("hybrid", best), ("hybrid-ref", best)]:
            if mode.startswith("hybrid") and best is None:
                continue
            r = size(pref if mode == "hybrid-ref" else p, day_counts(p, n, t), t)
            tables[n].append((mode, t, r))
            lines.append(
                "sizing participants=%d mode=%s threshold=%s posts_per_s=%s peak_posts_per_s=%s inbound_writes_per_s=%s "
                "peak_reads_per_s=%s merges_per_read=%s pull_p99=%d instances=%d kafka_partitions=%d kafka_brokers=%d "
                "cassandra_nodes=%d cassandra_tb=%s opensearch_nodes=%d opensearch_shards=%d pg_shards=%d redis_gb=%s "
                "storage_gb_per_day=%s cores_total=%s" % (
                    n, mode, "none" if t is None else t, fmt(r["posts_per_s"]), fmt(r["peak_posts_per_s"]),
                    fmt(r["inbound_writes_per_s"]), fmt(r["peak_reads_per_s"]), fmt(r["merges_per_read"]),
                    r["pull_p99"], r["instances"], r["kafka_partitions"], r["kafka_brokers"], r["cassandra_nodes"],
                    fmt(r["cassandra_tb"]), r["opensearch_nodes"], r["opensearch_shards"], r["pg_shards"],
                    fmt(r["redis_gb"]), fmt(r["storage_gb_day"]), fmt(r["cores_total"])))
    n = max(int(x) for x in p["participants"])
    for k, v in SENSITIVITY:
        q = dict(p, **{k: v})
        _, best = sweep(q, n)
        r = size(q, day_counts(q, n, best), best)
        lines.append("sensitivity participants=%d change=%s=%s threshold=%s cassandra_nodes=%d opensearch_nodes=%d "
                     "instances=%d kafka_partitions=%d storage_gb_per_day=%s cores_total=%s" % (
                         n, k, v, "none" if best is None else best, r["cassandra_nodes"], r["opensearch_nodes"],
                         r["instances"], r["kafka_partitions"], fmt(r["storage_gb_day"]), fmt(r["cores_total"])))
    return sim, lines, tables


ROWS = [("inbound rows written / s (peak)", "inbound_writes_per_s"), ("inbound page reads / s (peak)", "peak_reads_per_s"),
        ("pulled friends merged per read (mean)", "merges_per_read"), ("pulled friends merged per read (p99)", "pull_p99"),
        ("feed instances (8 cores)", "instances"), ("feed instance cores", "instance_cores"),
        ("Kafka posts-topic partitions", "kafka_partitions"), ("Kafka brokers", "kafka_brokers"),
        ("Kafka MB/s produced (peak)", "kafka_mb_s"), ("Kafka cores", "kafka_cores"),
        ("Cassandra replica writes / s (peak)", "cassandra_writes_per_s"), ("Cassandra cores", "cassandra_cores"),
        ("Cassandra data, TB (RF 3, retention)", "cassandra_tb"), ("Cassandra nodes (16 cores)", "cassandra_nodes"),
        ("OpenSearch cores", "opensearch_cores"), ("OpenSearch data, TB (3 copies, a year)", "opensearch_tb"),
        ("OpenSearch shards (all copies, a year of daily indices)", "opensearch_shards"),
        ("OpenSearch nodes (16 cores)", "opensearch_nodes"),
        ("PostgreSQL graph, TB", "pg_tb"), ("PostgreSQL queries / s (peak, cache misses + writes)", "pg_queries_per_s"),
        ("PostgreSQL primaries (shards)", "pg_shards"), ("Redis memory, GB", "redis_gb"), ("Redis shards", "redis_shards"),
        ("storage per day: inbound GB (RF 3)", "inbound_gb_day"), ("storage per day: outbound + posts GB (RF 3)", "outbound_gb_day"),
        ("storage per day: inbound GB if rows held references only (variant)", "inbound_ref_gb_day"),
        ("storage per day: search GB (3 copies)", "search_gb_day"), ("storage per day: Kafka GB (RF 3)", "kafka_gb_day"),
        ("storage per day, GB (all)", "storage_gb_day"), ("cores, all processes (peak)", "cores_total")]


def tables_md(tables):
    out = []
    for n, cols in tables.items():
        out.append("| %s participants | %s |" % ("{:,}".format(n), " | ".join(
            "%s%s" % (m, "" if t in (None, 0) else " (threshold %s)" % "{:,}".format(t)) for m, t, _ in cols)))
        out.append("|---|" + "---|" * len(cols))
        for label, k in ROWS:
            out.append("| %s | %s |" % (label, " | ".join(fmt(r[k]) for _, _, r in cols)))
        out.append("")
    return "\n".join(out).rstrip() + "\n"


QUOTED = r"^(?:sizing participants=|threshold participants=|breakeven |check n=|simcost n=|perpost |perread |sensitivity ).*$"


def line_key(l):
    """What names an output line (its kind and the fields before the first figure): a doc quotes it by this."""
    toks = l.split(" ")
    if toks[0] == "sensitivity":
        return " ".join(toks[:3])
    k = [toks[0]]
    for t in toks[1:]:
        if "=" in t and t.split("=")[0] not in ("n", "participants", "mode", "threshold"):
            break
        k.append(t)
    return " ".join(k)


def fill(path, lines, md):
    """Rewrites, in the doc at path, the tables between the markers and every quoted output line (matched by
    line_key) with this run's. Prose is left alone: re-read the figures it quotes."""
    by = {line_key(l): l for l in lines}
    doc = open(path).read()
    doc = re.sub(r"(<!-- sizing-tables:begin -->\n).*?(<!-- sizing-tables:end -->)",
                 lambda m: m.group(1) + md + m.group(2), doc, flags=re.S)
    out = []
    for l in doc.split("\n"):
        if re.match(QUOTED, l):
            if line_key(l) not in by:
                sys.exit("fill: no output line for " + line_key(l))
            l = by[line_key(l)]
        out.append(l)
    with open(path, "w") as f:
        f.write("\n".join(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", action="append", default=[], help="name=json-value: override a parameter")
    ap.add_argument("--write", help="write the results (lines and tables) to this markdown file")
    ap.add_argument("--fill", help="rewrite the tables and the quoted lines of this doc with this run's (prose untouched)")
    ap.add_argument("--check", help="a doc that quotes the output: exit 1 unless every output line it quotes, all the "
                                    "sizing lines and the tables match")
    args = ap.parse_args()
    p, raw = load_params(args.set)
    sim, lines, tables = run(p)
    md = tables_md(tables)
    print("info sim participants=%d friendships=%d mean_friends=%s posts=%d reads=%d" % (
        sim["n"], sim["edges"], fmt(sim["mean_degree"]), sim["posts"], sim["reads"]))
    print("\n".join(lines))
    if args.write:
        with open(args.write, "w") as f:
            f.write("# Feed sizing: output of bench/sizing/sizing.py\n\n"
                    "Generated by `python3 bench/sizing/sizing.py --write bench/results/feed-sizing.md`%s; inputs: "
                    "`bench/sizing/params.json` (what is measured, what is assumed: docs/feed-sizing.md). "
                    "Do not edit by hand.\n\n<!-- sizing-tables:begin -->\n%s<!-- sizing-tables:end -->\n\n```\n%s\n```\n" % (
                        "".join(" --set " + s for s in args.set), md, "\n".join(lines)))
    if args.fill:
        fill(args.fill, lines, md)
    if args.check:
        doc = open(args.check).read()
        bad = [l for l in re.findall(QUOTED, doc, re.M) if l not in lines]
        missing = [l for l in lines if l.startswith("sizing ") and l not in doc]
        m = re.search(r"<!-- sizing-tables:begin -->\n(.*?)<!-- sizing-tables:end -->", doc, re.S)
        if bad or missing or not m or m.group(1) != md:
            for l in bad:
                print("check-doc: not in the output: " + l)
            for l in missing:
                print("check-doc: not in the doc: " + l)
            if not m or m.group(1) != md:
                print("check-doc: the tables between <!-- sizing-tables:begin/end --> differ from the output")
            sys.exit(1)
        print("check-doc ok %s" % args.check)


if __name__ == "__main__":
    main()
