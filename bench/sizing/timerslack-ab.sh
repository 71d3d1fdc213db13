#!/usr/bin/env bash
# bench/sizing/timerslack-ab.sh: the Linux timer slack of one server's threads, A/B on a running, warm cluster under
# load (no restart: the JVM's JIT stays warm). Alternates the slack of every thread of SERVER between the values
# given (writes /proc/TID/timerslack_ns; threads made later inherit their creator's), and for each window prints the
# CPU of every cluster process per post (posts counted by the instances' /metrics) and the posts per second:
#   bench/sizing/timerslack-ab.sh DIR SERVER [SECONDS=30] [ROUNDS=3] [SLACKS="50000 500000"]
# DIR is a bin/herald-cluster directory that is up and under load (e.g. `herald-load feed` through its balancer).
# Each window starts SETTLE (5) seconds after the switch. One line per window:
#   timerslack server=<s> slack_ns=<n> round=<r> posts_per_s=<x> <process>_us_per_post=<x> ... all_us_per_post=<x> load=<x>
# Root (or the server's user) is needed to write another process's timer slack. The last value of SLACKS stays set.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIR=$1 SERVER=$2 SECS=${3:-30} ROUNDS=${4:-3} SLACKS=${SLACKS:-${5:-"50000 500000"}} SETTLE=${SETTLE:-5}
. "$ROOT/bench/sizing/window.sh"
cluster_of "$DIR"
PID=$(pid_of "$SERVER")
[ -n "$PID" ] || { echo "no process $SERVER in $DIR" >&2; exit 1; }
set_slack() { for t in /proc/"$PID"/task/*; do echo "$1" >"/proc/${t##*/}/timerslack_ns" 2>/dev/null || true; done; }
for r in $(seq 1 "$ROUNDS"); do
  for s in $SLACKS; do
    set_slack "$s"; sleep "$SETTLE"
    measure_window "timerslack server=$SERVER slack_ns=$s round=$r" "$SECS"
  done
done
