#!/usr/bin/env bash
# bench/sizing/stores-split.sh: where Cassandra's and OpenSearch's CPU goes per post in a running :scale cluster under
# a workload (e.g. `herald-load feed` through its balancer, started beforehand and warmed up >= 3 minutes: the
# servers' JIT). Over one window of SECONDS it reads, together: the requests the instances answered (their /metrics:
# posts, searches, feed reads, ...), OpenSearch's node stats (queries, indexed documents, refreshes, merges), and each
# server's CPU by thread pool (bench/sizing/threads.py: Cassandra's MutationStage, ReadStage, Native-Transport,
# compaction, ...; OpenSearch's write, search, refresh, merge, http threads, ...). Prints the requests, the thread
# lines, then per server `split server=<s> cpu_ms=<n> us_per_post=<x>` and its pools' us per post.
#   bench/sizing/stores-split.sh DIR [SECONDS=30]      (DIR: a bin/herald-cluster directory that is up)
# JCMD [the JDK 17 jcmd next to the servers' java]. Read only: changes nothing in the cluster.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$1 SECS=${2:-30}
JCMD=${JCMD:-$(ls /usr/lib/jvm/*17*/bin/jcmd 2>/dev/null | head -1)}
status=$("$ROOT/bin/herald-cluster" status --dir "$DIR")
pid_of() { awk -v n="$1" '$1 == "state" && $2 == n { sub("pid=", "", $5); print $5 }' <<<"$status"; }
addr_of() { awk -v n="$1" '$1 == "state" && $2 == n { print $4 }' <<<"$status"; }
CPID=$(pid_of cassandra) OPID=$(pid_of opensearch) OURL=$(addr_of opensearch)
INSTANCES=$(awk '$1 == "instance" { print $3 }' <<<"$status")
T=$(mktemp -d)
requests() { for u in $INSTANCES; do curl -s "$u/metrics"; done |
  awk '/^herald_feed_requests_total/ { match($0, /entity="[^"]*",operation="[^"]*"/); k = substr($0, RSTART, RLENGTH); n[k] += $NF } END { for (k in n) print k, n[k] }'; }
osstats() { curl -s "$OURL/_nodes/stats/indices/search,indexing,refresh,merge?filter_path=nodes.*.indices" |
  python3 -c 'import json,sys; i=list(json.load(sys.stdin)["nodes"].values())[0]["indices"]
print("queries", i["search"]["query_total"]); print("indexed", i["indexing"]["index_total"])
print("refreshes", i["refresh"]["total"]); print("merges", i["merges"]["total"]); print("merged_docs", i["merges"]["total_docs"])'; }
requests >"$T/r0"; osstats >"$T/o0"
python3 "$ROOT/bench/sizing/threads.py" "$CPID" "$SECS" "$JCMD" >"$T/cassandra" &
python3 "$ROOT/bench/sizing/threads.py" "$OPID" "$SECS" "$JCMD" >"$T/opensearch" &
wait
requests >"$T/r1"; osstats >"$T/o1"
echo "window ${SECS}s at $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
POSTS=$(join "$T/r0" "$T/r1" 2>/dev/null | awk '{ d = $3 - $2; print "requests", $1, d > "/dev/stderr" } $1 ~ /entity="outbound",operation="post"/ { p = $3 - $2 } END { print p + 0 }')
join "$T/o0" "$T/o1" | awk '{ print "opensearch_stats", $1, $3 - $2 }'
for s in cassandra opensearch; do
  sed "s/^/$s /" "$T/$s"
  awk -v s="$s" -v p="$POSTS" '/^threads group=/ { split($3, c, "="); split($2, g, "="); if (p > 0 && c[2] * 1000 / p >= 10) printf "split server=%s pool=%s us_per_post=%.0f\n", s, g[2], c[2] * 1000 / p }
    /total_cpu_ms/ { split($2, c, "="); if (p > 0) printf "split server=%s posts=%d cpu_ms=%d us_per_post=%.0f\n", s, p, c[2], c[2] * 1000 / p }' "$T/$s"
done
rm -rf "$T"
