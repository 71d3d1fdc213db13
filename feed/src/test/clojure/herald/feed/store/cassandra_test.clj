(ns herald.feed.store.cassandra-test
  "The Cassandra :feeds backend against a real Cassandra 5.0 node: the storage contract through the :scale store,
  reopening a keyspace, paging over equal timestamps, the post log, bad config."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed.servers.cassandra :as node]
            [herald.feed.store :as s]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.cassandra :as cassandra]
            [herald.feed.store.cassandra.schema :as schema]
            [herald.feed.store.cassandra.session :as cs]
            [herald.feed.store.clock :as clock]
            [herald.feed.store.scale.roles :as roles]
            [herald.feed.store.contract :as contract :refer [post-of thrown-type all-pages]]
            [herald.feed.store.scale.spi :as spi])
  (:import (com.datastax.oss.driver.api.core CqlSession)
           (com.datastax.oss.driver.api.core.cql Row)
           (java.util.concurrent.atomic AtomicLong)))

(set! *warn-on-reflection* true)

(def ^:private keyspaces (AtomicLong.))

(defn fresh-keyspace
  "A keyspace name no test used before (on this node, in this JVM)."
  []
  (str "t" (Long/toString (System/currentTimeMillis) 36) "_" (.incrementAndGet ^AtomicLong keyspaces)))

(defn feeds-config
  "The :feeds config for the test node on a fresh keyspace (or :keyspace of more), generous timeouts."
  [cp & {:as more}]
  (merge {:contact-points [cp] :keyspace (fresh-keyspace) :request-timeout-ms 30000} more))

(defn- open-scale [cp]
  (s/open-store (merge roles/all-in-memory {:type :scale :feeds (assoc (feeds-config cp) :type :cassandra)})))

(defmacro ^:private contract-tests
  "One deftest per contract check through {:type :scale :feeds {:type :cassandra}} (other roles in memory)."
  []
  `(do ~@(for [k (keys contract/checks)]
           `(deftest ~(symbol (str "cassandra-" k))
              (node/with-node [cp#]
                (contract/run-check (fn [] (open-scale cp#)) s/close-store! (get contract/checks ~k)))))))

(contract-tests)

(defn- session ^CqlSession [feeds] (.-session ^herald.feed.store.cassandra.CassandraFeeds feeds))

(deftest reopen-keeps-feeds-pending-and-the-clock
  (node/with-node [cp]
    (let [cfg (feeds-config cp)
          [p1 p2 p3] (let [f (cassandra/open cfg)]
                       (try (let [p1 (feeds/publish! f (post-of 1 "one") [2 3])
                                  p2 (feeds/publish! f (post-of 2 "two") [1])
                                  p3 (feeds/publish! f (post-of 1 "three") [])]
                              (feeds/fan-out! f p1 [2 3])
                              [p1 p2 p3])
                            (finally (s/close-store! f))))
          f (cassandra/open cfg)]
      (try
        (is (= [p3 p1] (:items (feeds/outbound f 1))))
        (is (= [p1] (:items (feeds/inbound f 2))))
        (is (= p2 (feeds/post f (:id p2))))
        (is (= [{:post p2 :recipients [1]}] (feeds/pending-fanouts f)) "the pending fan-out survives")
        (is (= [p1 p2 p3] (spi/-posts-after f 0 10)))
        (let [p4 (feeds/publish! f (post-of 3 "four") [1])]
          (is (> (:ts p4) (:ts p3)) ":ts restarts above the highest stored")
          (is (> (:id p4) (:id p3)))
          (feeds/fan-out! f p2 [1])
          (is (= [{:post p4 :recipients [1]}] (feeds/pending-fanouts f)))
          (is (= [p2] (:items (feeds/inbound f 1))) "p4 is pending, not delivered"))
        (finally (s/close-store! f))))))

(deftest scale-store-reopens-on-the-same-keyspace
  (node/with-node [cp]
    (let [cfg (merge roles/all-in-memory {:type :scale :feeds (assoc (feeds-config cp) :type :cassandra)})
          p (let [st (s/open-store cfg)]
              (try (feeds/publish! st (post-of 1 "kept across a restart") [2]) (finally (s/close-store! st))))
          st (s/open-store cfg)]
      (try
        (is (= [p] (:items (feeds/outbound st 1))))
        (is (= [{:post p :recipients [2]}] (vec (feeds/pending-fanouts st))))
        (is (< (:ts p) (:ts (feeds/publish! st (post-of 1 "later") []))))
        (finally (s/close-store! st))))))

(deftest batch-fan-out-through-the-scale-store
  (node/with-node [cp]
    (let [st (open-scale cp)]
      (try
        (let [p1 (feeds/publish! st (post-of 1 "one") [2 3])
              p2 (feeds/publish! st (post-of 2 "two") [1])
              p3 (feeds/publish! st (post-of 1 "three") [3])
              batch [{:post p1 :recipients [2 3]} {:post p2 :recipients [1]} {:post p3 :recipients [3]}]]
          (is (feeds/batch-fan-out? st))
          (is (= 3 (count (feeds/pending-fanouts st))))
          (feeds/fan-out-all! st batch)
          (feeds/fan-out-all! st (subvec batch 1))
          (is (empty? (feeds/pending-fanouts st)) "every record completed")
          (is (= [p3 p1] (:items (feeds/inbound st 3))) "delivered once, newest first")
          (is (= [p1] (:items (feeds/inbound st 2))))
          (is (= [p2] (:items (feeds/inbound st 1)))))
        (finally (s/close-store! st))))))

(deftest cursor-walks-equal-timestamps
  (node/with-node [cp]
    (let [f (cassandra/open (feeds-config cp))
          ;; delivered posts may share a :ts (published by different instances): (ts, id) orders them
          posts (vec (for [ts [100 200 200 200 200 300] :let [id (+ (* ts 10) (rand-int 10))]]
                       {:id id :from 9 :occurred "2026-11-22" :subject "s" :story (str "at " ts) :ts ts}))
          posts (vec (distinct posts))
          newest-first (vec (sort-by (juxt :ts :id) #(compare %2 %1) posts))]
      (try
        (doseq [p (shuffle posts)] (feeds/deliver! f 5 p) (feeds/deliver! f 5 p))
        (doseq [n [1 2 3 4 (count posts)]]
          (is (= newest-first (first (all-pages #(feeds/inbound f 5 %) n))) (str "pages of " n)))
        (finally (s/close-store! f))))))

(defn- put-logged-post!
  "Writes a post as an instance would have published it at ts (any hour), through CQL."
  [^CqlSession ss keyspace {:keys [id from ts story]}]
  (doseq [cql [(format "INSERT INTO %s.outbound (sender, ts, id, occurred, subject, story) VALUES (%d, %d, %d, '2026-11-22', 's', '%s')"
                       keyspace from ts id story)
               (format "INSERT INTO %s.posts (id, sender, ts) VALUES (%d, %d, %d)" keyspace id from ts)
               (format "INSERT INTO %s.post_log (bucket, ts, id, sender) VALUES (%d, %d, %d, %d)"
                       keyspace (schema/log-bucket ts) ts id from)
               (format "INSERT INTO %s.buckets (kind, bucket) VALUES ('log', %d)" keyspace (schema/log-bucket ts))]]
    (.execute ss ^String cql)))

(deftest posts-after-crosses-hour-buckets-in-order
  (node/with-node [cp]
    (let [cfg (feeds-config cp)
          f (cassandra/open cfg)
          hour schema/log-bucket-micros
          t0 (* 480000 (long hour))
          old (vec (for [[i ts] (map-indexed vector [(+ t0 5) (+ t0 hour 1) (+ t0 hour 2) (+ t0 (* 3 hour) 7)])]
                     {:id (schema/post-id ts 3) :from (inc i) :occurred "2026-11-22" :subject "s"
                      :story (str "old " i) :ts ts}))]
      (try
        (doseq [p (shuffle old)] (put-logged-post! (session f) (:keyspace cfg) p))
        (let [now (feeds/publish! f (post-of 7 "now") [])
              all (conj old now)]
          (is (= all (spi/-posts-after f 0 100)) "ascending by :ts across buckets")
          (is (= (subvec all 0 2) (spi/-posts-after f 0 2)) "the limit holds across buckets")
          (is (= (subvec all 2) (spi/-posts-after f (:ts (old 1)) 100)) "strictly after ts")
          (is (= [now] (spi/-posts-after f (:ts (old 3)) 100)))
          (is (= [] (spi/-posts-after f (:ts now) 100)))
          (is (= (old 2) (feeds/post f (:id (old 2))))))
        (finally (s/close-store! f))))))

(defn- registered-pending [^CqlSession ss keyspace]
  (mapv #(.getLong ^Row % "bucket")
        (.execute ss (format "SELECT bucket FROM %s.buckets WHERE kind = 'pending'" keyspace))))

(deftest pending-in-old-buckets-come-first-and-empty-old-buckets-are-swept
  (node/with-node [cp]
    (let [cfg (feeds-config cp)
          f (cassandra/open cfg)
          ss (session f)
          ks (:keyspace cfg)
          ts (- (clock/now-micros) 3600000000)
          old {:id (schema/post-id ts 7) :from 4 :occurred "2026-11-22" :subject "s" :story "an hour ago" :ts ts}
          pb (schema/pending-bucket ts)]
      (try
        (put-logged-post! ss ks old)
        (.execute ss (format "INSERT INTO %s.pending_fanouts (bucket, ts, id, sender, recipients) VALUES (%d, %d, %d, 4, [8, 9])"
                             ks pb ts (:id old)))
        (.execute ss (format "INSERT INTO %s.buckets (kind, bucket) VALUES ('pending', %d)" ks pb))
        (let [p (feeds/publish! f (post-of 5 "now") [8])]
          (is (= [{:post old :recipients [8 9]} {:post p :recipients [8]}] (feeds/pending-fanouts f)) "oldest first")
          (feeds/fan-out! f old [8 9])
          (is (= [{:post p :recipients [8]}] (feeds/pending-fanouts f)))
          (is (= [(schema/pending-bucket (:ts p))] (registered-pending ss ks)) "the old, empty bucket left the registry")
          (is (= [old] (:items (feeds/inbound f 9)))))
        (finally (s/close-store! f))))))

(deftest large-post-and-many-recipients
  (node/with-node [cp]
    (let [f (cassandra/open (feeds-config cp :fanout-concurrency 8))
          story (apply str (repeat 8000 "Grüße 🚀 "))
          rs (vec (range 1000 1300))
          p (feeds/publish! f (post-of 1 story) rs)]
      (try
        (is (= p (feeds/post f (:id p))) "a ~100 KB post in the publish batch (above Cassandra's default 50 KiB batch limit: the test node allows 2 MiB)")
        (feeds/fan-out! f p rs)
        (is (every? #(= [p] (:items (feeds/inbound f %))) [1000 1234 1299]))
        (is (empty? (feeds/pending-fanouts f)))
        (finally (s/close-store! f))))))

(deftest closed-and-ready
  (node/with-node [cp]
    (let [f (cassandra/open (feeds-config cp))]
      (is (true? (s/ready? f)))
      (is (= {:pending-fanouts 0} (s/stats f)))
      (feeds/publish! f (post-of 1 "x") [2])
      (is (= 1 (:pending-fanouts (s/stats f))))
      (s/close-store! f)
      (s/close-store! f)
      (is (false? (s/ready? f)))
      (is (= ::s/closed (thrown-type #(feeds/outbound f 1))))
      (is (= ::s/closed (thrown-type #(feeds/publish! f (post-of 1 "y") [])))))))

(deftest driver-errors-are-typed
  (node/with-node [cp]
    (testing "too few replicas for the consistency: unavailable, naming the operation"
      (let [cfg (feeds-config cp :replication {"class" "SimpleStrategy" "replication_factor" 3})
            e (try (cassandra/open cfg) nil (catch clojure.lang.ExceptionInfo e e))]
        (is (= [:herald.feed.store.cassandra/unavailable "reading the last post"] ((juxt :type :op) (ex-data e))))
        (is (re-find #"LOCAL_QUORUM" (ex-message e)) (ex-message e))
        (let [one (cassandra/open (assoc cfg :consistency :one :create-schema? false))]
          (try (is (= [] (:items (feeds/outbound one 1))) "the keyspace and tables were created before the failing read")
               (finally (s/close-store! one))))))
    (testing "no schema and :create-schema? false: the missing table is named"
      (let [e (try (cassandra/open (feeds-config cp :create-schema? false)) nil (catch clojure.lang.ExceptionInfo e e))]
        (is (= :herald.feed.store.cassandra/invalid-query (:type (ex-data e))))
        (is (re-find #"(?i)keyspace|table" (ex-message e)) (ex-message e))))))

(deftest bad-config-names-the-key
  (doseq [[k v] [[:contact-points []] [:contact-points ["localhost"]] [:contact-points ["127.0.0.1:9042" 9042]]
                 [:local-datacenter ""] [:keyspace "Bad-Name"] [:keyspace "x;DROP"] [:replication {}]
                 [:replication {"replication_factor" 1}] [:replication {"class" "Simple'Strategy"}]
                 [:create-schema? "yes"] [:consistency :most] [:request-timeout-ms 0] [:connect-timeout-ms "1"]
                 [:schema-timeout-ms -1] [:node-id 1024] [:node-id -1] [:fanout-concurrency 0]]]
    (let [e (try (cassandra/open {k v}) nil (catch clojure.lang.ExceptionInfo e e))]
      (is (= {:type ::s/invalid :key k :value v} (select-keys (ex-data e) [:type :key :value])) (pr-str k v))
      (is (.startsWith (str (ex-message e)) (str k " ")) (ex-message e))))
  (testing "a comma-separated string of contact points (from the environment) is split"
    (is (= ["a:1" "b:2"] (:contact-points (cs/validate (merge cs/defaults {:contact-points " a:1, b:2 "})))))
    (is (= ::s/invalid (thrown-type #(cassandra/open {:contact-points "a:1,b"})))))
  (testing "through the :scale store the key is a path"
    (let [e (try (s/open-store (merge roles/all-in-memory {:type :scale :feeds {:type :cassandra :node-id 5000}})) nil
                 (catch clojure.lang.ExceptionInfo e e))]
      (is (= [::s/invalid [:feeds :node-id]] ((juxt :type :key) (ex-data e))))))
  (testing "no node at the contact point"
    (let [port (with-open [ss (java.net.ServerSocket. 0)] (.getLocalPort ss))
          e (try (cassandra/open {:contact-points [(str "127.0.0.1:" port)] :connect-timeout-ms 2000}) nil
                 (catch clojure.lang.ExceptionInfo e e))]
      (is (= [:herald.feed.store.cassandra/unavailable :contact-points] ((juxt :type :key) (ex-data e)))))))

(deftest tombstones-of-an-older-version-are-copied-on-open
  (node/with-node [cp]
    (let [config (feeds-config cp)
          f1 (cassandra/open config)
          ts (clock/now-micros) id (schema/post-id ts 0)
          post {:id id :ts ts :from 1 :occurred "2026-11-26" :subject "s" :story "deleted before its replay"}]
      ;; a delete as versions before 2026-11-26 recorded it: in deleted_posts only
      (cs/execute! (session f1) "an old tombstone"
                   (str "INSERT INTO " (:keyspace config) ".deleted_posts (id, sender, ts) VALUES (" id ", 1, " ts ")"))
      (herald.feed.store.lifecycle/-close! f1)
      (let [f2 (cassandra/open config)]
        (try
          (herald.feed.store.feeds/-deliver-all! f2 [{:post post :recipients [2]}])
          (is (= [] (:items (herald.feed.store.feeds/-inbound f2 2 {:limit 10}))) "a replayed delivery of the deleted post is skipped")
          (herald.feed.store.feeds/-deliver-all! f2 [{:post (assoc post :id (inc id)) :recipients [2]}])
          (is (= [(inc id)] (map :id (:items (herald.feed.store.feeds/-inbound f2 2 {:limit 10})))) "a post without one is delivered")
          (finally (herald.feed.store.lifecycle/-close! f2)))))))
