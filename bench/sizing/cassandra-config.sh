#!/usr/bin/env bash
# bench/sizing/cassandra-config.sh: Cassandra CPU per post of the fan-out's writes under two or more cassandra.yaml
# templates, alternating. For each YAML in turn: restarts the cassandra node of a running bin/herald-cluster DIR with
# it (HERALD_CASSANDRA_YAML), then runs bench/sizing/cassandra-batches.clj (variant grouped: a warm-up of POSTS/2
# posts, then ROUNDS x POSTS) and prefixes its lines with config=NAME (the file's base name). The node keeps its data
# between restarts, so alternate the configs (A B A B) to spread the data's growth over both.
#   bench/sizing/cassandra-config.sh DIR A.yaml B.yaml A.yaml B.yaml
# Environment: ROUNDS [3], POSTS [6000], POSTS_PER_CALL [20], RECIPIENTS [3]. Writes into the keyspace herald_feed:
# use a throwaway cluster. At the end the node runs on the last YAML: `bin/herald-cluster kill/start --dir DIR
# cassandra` without HERALD_CASSANDRA_YAML restores the bundled one.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=${1:?usage: cassandra-config.sh DIR YAML...}; shift
[ -f "$DIR/cluster.env" ] || { echo "no cluster under $DIR" >&2; exit 1; }
JAVA=$("$ROOT/build/find-jdk.sh")/bin/java
CP=$ROOT/feed/src/main/clojure:$([ -f "$DIR/feed.jar" ] && echo "$DIR/feed.jar" || echo "$ROOT/feed/target/herald-feed.jar")
for y in "$@"; do
  name=$(basename "$y" .yaml); y=$(readlink -f "$y")
  "$ROOT/bin/herald-cluster" kill --dir "$DIR" cassandra >/dev/null 2>&1 || true
  # on a loaded machine `start` has reported a node that came up as exited: ask once more (it returns at once when up)
  HERALD_CASSANDRA_YAML=$y "$ROOT/bin/herald-cluster" start --dir "$DIR" cassandra >/dev/null ||
    { sleep 5; HERALD_CASSANDRA_YAML=$y "$ROOT/bin/herald-cluster" start --dir "$DIR" cassandra >/dev/null; }
  . "$DIR/cluster.env"
  echo "config=$name restarted, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  "$JAVA" --sun-misc-unsafe-memory-access=allow -cp "$CP" clojure.main "$ROOT/bench/sizing/cassandra-batches.clj" \
    "$(cat "$DIR/cassandra/pid")" "$CASSANDRA_PORT" "${POSTS_PER_CALL:-20}" "${RECIPIENTS:-3}" "${ROUNDS:-3}" "${POSTS:-6000}" grouped 2>&1 |
    grep --line-buffered '^cassandra_batches' | sed "s/^/config=$name /"
done
