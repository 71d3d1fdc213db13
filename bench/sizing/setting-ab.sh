#!/usr/bin/env bash
# bench/sizing/setting-ab.sh: a setting that can change in place (an OpenSearch index setting, a thread attribute),
# A/B on a running, warm cluster under load (no restart: every JVM's JIT stays warm). Runs each variant's shell
# command in turn (the variants alternate, ROUNDS times), waits SETTLE (10) seconds, then measures SECONDS: the CPU of
# every cluster process (process trees) per post (posts counted by the instances' /metrics) and the posts per second:
#   bench/sizing/setting-ab.sh DIR SECONDS ROUNDS NAME=COMMAND [NAME=COMMAND ...]
# DIR is a bin/herald-cluster directory that is up and under load (e.g. `herald-load feed` through its balancer);
# each COMMAND runs with DIR's cluster.env in its environment (OPENSEARCH_PORT, ...). One line per window:
#   setting variant=<name> round=<r> posts_per_s=<x> <process>_us_per_post=<x> ... all_us_per_post=<x> load=<x>
# The last variant's setting stays in place. bench/sizing/timerslack-ab.sh is the timer-slack special case.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$1 SECS=$2 ROUNDS=$3; shift 3
SETTLE=${SETTLE:-10}
set -a; . "$DIR/cluster.env"; set +a
. "$ROOT/bench/sizing/window.sh"
cluster_of "$DIR"
for r in $(seq 1 "$ROUNDS"); do
  for v in "$@"; do
    name=${v%%=*} cmd=${v#*=}
    bash -c "$cmd" >/dev/null; sleep "$SETTLE"
    measure_window "setting variant=$name round=$r" "$SECS"
  done
done
