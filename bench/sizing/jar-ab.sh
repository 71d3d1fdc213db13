#!/usr/bin/env bash
# bench/sizing/jar-ab.sh: two (or more) builds of the feed A/B on one running cluster under load: the servers stay
# up and warm, only instance 1 is restarted on each variant's jar (a copy of feed/target/herald-feed.jar of that
# build) before its window. The variants alternate, ROUNDS times; after each restart SETTLE (60) seconds pass (the
# instance's JIT warms up alike in every window), then SECONDS are measured: the CPU of every cluster process per
# post (window.sh's measure_window) and the posts per second:
#   bench/sizing/jar-ab.sh DIR SECONDS ROUNDS NAME=JAR [NAME=JAR ...]
# DIR is a bin/herald-cluster directory that is up with one instance and under load through its balancer (the
# load's requests fail while the instance restarts). One line per window:
#   jar variant=<name> round=<r> posts_per_s=<x> <process>_us_per_post=<x> ... all_us_per_post=<x> load=<x>
# The last variant's jar stays running. TABLE_WRITES=1: also Cassandra's writes per post of each feeds table over the
# window (system_views.local_write_latency, read by bench/sizing/cassandra-table-writes.clj before and after it):
#   jar_writes variant=<name> round=<r> <table>_per_post=<x> ...
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$1 SECS=$2 ROUNDS=$3; shift 3
SETTLE=${SETTLE:-60}
. "$ROOT/bench/sizing/window.sh"
set -a; . "$DIR/cluster.env"; set +a
table_writes() { "$("$ROOT/build/find-jdk.sh")/bin/java" -cp "$DIR/feed.jar" clojure.main \
  "$ROOT/bench/sizing/cassandra-table-writes.clj" "$CASSANDRA_PORT" 2>/dev/null; }
for r in $(seq 1 "$ROUNDS"); do
  for v in "$@"; do
    name=${v%%=*} jar=${v#*=}
    [ -f "$jar" ] || { echo "jar-ab: no jar $jar" >&2; exit 2; }
    "$ROOT/bin/herald-cluster" kill --dir "$DIR" 1 >/dev/null || true   # not running: started below
    HERALD_FEED_CLASSPATH=$jar "$ROOT/bin/herald-cluster" start --dir "$DIR" 1 >/dev/null
    sleep "$SETTLE"
    cluster_of "$DIR"   # the instance's new pid
    if [ "${TABLE_WRITES:-}" = 1 ]; then w0=$(table_writes); q0=$(posts); fi
    measure_window "jar variant=$name round=$r" "$SECS"
    if [ "${TABLE_WRITES:-}" = 1 ]; then
      w1=$(table_writes); q1=$(posts)
      join <(sort <<<"$w0") <(sort <<<"$w1") |
        awk -v n="jar_writes variant=$name round=$r" -v p=$((q1 - q0)) '{ n = n sprintf(" %s_per_post=%.2f", $1, ($3 - $2) / (p > 0 ? p : 1)) } END { print n }'
    fi
  done
done
