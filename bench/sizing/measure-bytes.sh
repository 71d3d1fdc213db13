#!/usr/bin/env bash
# bench/sizing/measure-bytes.sh: the byte sizes the sizing model (bench/sizing/params.json) takes as measured,
# measured on this machine from the repository's own code and schemas:
#   1. a reference post (herald-load's dictionary, 5-word subject, 150-word story): subject and story bytes;
#   2. LZ4 on inbound-row-like text in 16 KiB chunks (Cassandra's default compressor and chunk length);
#   3. PostgreSQL bytes per friendship and per participant row, indexes included (the migration's DDL, Debian's
#      PostgreSQL, 1,000,000 friendships inserted in random order, then VACUUM ANALYZE);
#   4. Redis bytes per cached friend-list entry and per cached participant (values as herald.feed.store.redis
#      writes them: EDN text).
# Prints `measured <key>=<value>` lines last. Needs a JDK >= 21 (build/find-jdk.sh), Clojure in ~/.m2, lz4,
# Debian's postgresql (run as root: the server runs as user postgres) and redis-server. ~1 minute.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d /tmp/herald-sizing-bytes.XXXXXX)
PG_PID="" ; REDIS_PID=""
cleanup() {
  [ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null || true
  if [ -n "$PG_PID" ]; then runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/pg" -m fast stop >/dev/null 2>&1 || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
out=()

# 1-2. posts from herald-load's own generator
JAVA_HOME=$("$ROOT/build/find-jdk.sh")
CP=$(find ~/.m2/repository/org/clojure/clojure -name 'clojure-1.12*.jar' | sort | tail -1)
CP=$CP:$(find ~/.m2/repository/org/clojure/spec.alpha -name '*.jar' | sort | tail -1)
CP=$CP:$(find ~/.m2/repository/org/clojure/core.specs.alpha -name '*.jar' | sort | tail -1)
"$JAVA_HOME/bin/java" -cp "$CP:$ROOT/load/src/main/clojure" clojure.main -e "
(require '[herald.load.impl.words :as w])
(let [d (w/dictionary) r (java.util.Random. 7) n 20000
      posts (vec (repeatedly n #(vector (w/sentence r d 5) (w/sentence r d 150))))
      len (fn [^String s] (alength (.getBytes s \"UTF-8\")))]
  (println (format \"measured post_subject_bytes=%.1f\" (double (/ (reduce + (map (comp len first) posts)) n))))
  (println (format \"measured post_story_bytes=%.1f\" (double (/ (reduce + (map (comp len second) posts)) n))))
  ;; inbound-like rows: 4 longs as decimal text stand in for the binary columns (conservative), then the text
  (with-open [o (java.io.FileOutputStream. \"$WORK/rows.bin\")]
    (doseq [[i [s t]] (map-indexed vector posts)]
      (.write o (.getBytes (str (+ 100000000 i) (+ 1700000000000000 i) (* 1024 (+ 1700000000000000 i)) (+ 5000000 (* 7 i)) \"2026-11-25\" s t) \"UTF-8\")))))
" > "$WORK/post.txt"
while read -r l; do out+=("$l"); done < "$WORK/post.txt"
split -b 16384 -a 5 "$WORK/rows.bin" "$WORK/chunk."
raw=0; comp=0
for f in "$WORK"/chunk.*; do
  raw=$((raw + $(stat -c %s "$f"))); comp=$((comp + $(lz4 -1 -BD -c -q "$f" | wc -c)))
done
out+=("measured lz4_ratio_16k=$(python3 -c "print(round($comp/$raw,3))")")
rm -f "$WORK"/chunk.*

# 3. PostgreSQL
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
mkdir -p "$WORK/pg"; chown postgres "$WORK" "$WORK/pg"; chmod 755 "$WORK"
runuser -u postgres -- "$PGBIN/initdb" -D "$WORK/pg" -A trust -U postgres >/dev/null
PGPORT=$(free_port)
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/pg" -o "-p $PGPORT -k $WORK -c listen_addresses=''" -l "$WORK/pg.log" -w start >/dev/null
PG_PID=1
psql_() { runuser -u postgres -- "$PGBIN/psql" -h "$WORK" -p "$PGPORT" -U postgres -qAt -v ON_ERROR_STOP=1 "$@"; }
psql_ -c "CREATE TABLE participants (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name bytea NOT NULL);
CREATE TABLE friendships (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, lo bigint NOT NULL, hi bigint NOT NULL,
  CONSTRAINT friendships_pair UNIQUE (lo, hi), CONSTRAINT friendships_ordered CHECK (lo < hi));
CREATE INDEX friendships_by_hi ON friendships (hi, lo);
INSERT INTO participants (name) SELECT convert_to('participant ' || g, 'UTF8') FROM generate_series(1, 200000) g ORDER BY random();
INSERT INTO friendships (lo, hi) SELECT g % 200000 + 1, g % 200000 + 2 + (g / 200000) * 37
  FROM generate_series(0, 999999) g ORDER BY random();"
psql_ -c "VACUUM ANALYZE participants"; psql_ -c "VACUUM ANALYZE friendships"
out+=("measured pg_bytes_per_friendship=$(psql_ -c "SELECT round(pg_total_relation_size('friendships')::numeric / count(*), 1) FROM friendships")")
out+=("measured pg_bytes_per_participant=$(psql_ -c "SELECT round(pg_total_relation_size('participants')::numeric / count(*), 1) FROM participants")")

# 4. Redis: 2,000 friend lists of 166 entries (10-digit friendship ids, 9-digit participant ids) and 20,000
# participants, as EDN strings under herald-like keys with a TTL; bytes from INFO memory (used_memory) deltas
RPORT=$(free_port)
redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >/dev/null 2>&1 &
REDIS_PID=$!
for _ in $(seq 50); do redis-cli -p "$RPORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
used() { redis-cli -p "$RPORT" info memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p'; }
python3 - "$WORK/redis-friends.txt" "$WORK/redis-participants.txt" <<'EOF'
import random, sys
r = random.Random(5)
with open(sys.argv[1], "w") as f:
    for k in range(2000):
        me = 100000000 + k
        items = ", ".join("{:id %d, :from %d, :to %d}" % (r.randrange(10**9, 10**10), me, r.randrange(10**8, 10**9))
                          for _ in range(166))
        f.write('SET "herald:cache:v:[:friends %d]" "[%s]" PX 600000\n' % (me, items))
with open(sys.argv[2], "w") as f:
    for k in range(20000):
        me = 100000000 + k
        f.write('SET "herald:cache:v:[:participant %d]" "{:id %d, :name \\"participant %d\\"}" PX 600000\n' % (me, me, me))
EOF
m0=$(used); redis-cli -p "$RPORT" < "$WORK/redis-friends.txt" >/dev/null; m1=$(used)
redis-cli -p "$RPORT" < "$WORK/redis-participants.txt" >/dev/null; m2=$(used)
out+=("measured redis_bytes_per_friend_entry=$(python3 -c "print(round(($m1-$m0)/(2000*166),1))")")
out+=("measured redis_bytes_per_participant=$(python3 -c "print(round(($m2-$m1)/20000,1))")")
out+=("measured redis_bytes_per_friend_list_key=$(python3 -c "print(round(($m1-$m0)/2000,1))")")

printf '%s\n' "${out[@]}"
