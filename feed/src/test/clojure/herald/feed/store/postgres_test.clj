(ns herald.feed.store.postgres-test
  "The PostgreSQL graph backend on a real server: the storage contract through the :scale store, concurrent
  befriends, restart, schema versions, bad config and driver errors."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed.servers.postgres :as pg]
            [herald.feed.store :as s]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.contract :as contract :refer [thrown-type]]
            [herald.feed.store.postgres :as postgres]
            [herald.feed.store.scale.roles :as roles])
  (:import (java.sql DriverManager)
           (java.util.concurrent CountDownLatch Executors Future)))

(set! *warn-on-reflection* true)

(defn- open-scale [] (s/open-store (merge roles/all-in-memory {:type :scale :graph (assoc (pg/fresh-config) :type :postgres)})))

(defmacro ^:private contract-when-up [prefix]
  `(do ~@(for [k (keys contract/checks)]
           `(deftest ~(symbol (str prefix "-" k))
              (pg/when-up (contract/run-check open-scale s/close-store! (get contract/checks ~k)))))))

(contract-when-up scale-postgres)

(deftest ^:integration concurrent-befriends-make-one-friendship-per-pair
  (pg/when-up
   (let [st (postgres/open (pg/fresh-config))
         ids (vec (repeatedly 12 #(:id (graph/create-participant! st "p"))))
         pairs (vec (for [i (range 12) j (range 12) :when (< i j) :when (< (rand) 0.3)] [(ids i) (ids j)]))
         threads 16
         start (CountDownLatch. 1)
         pool (Executors/newFixedThreadPool threads)]
     (try
       (let [futures (vec (for [t (range threads)]
                            (.submit pool ^Callable
                                     (fn [] (.await start)
                                       (vec (for [[a b] (shuffle pairs)]
                                              (if (even? t) (graph/befriend! st a b) (graph/befriend! st b a))))))))
             _ (.countDown start)
             results (mapcat #(.get ^Future %) futures)
             by-pair (group-by (fn [{:keys [from to]}] (sort [from to])) results)]
         (is (= (count pairs) (count by-pair)))
         (doseq [[pair rs] by-pair]
           (is (= 1 (count (distinct (map :id rs)))) (str "one id for " pair))
           (is (= 1 (count (filter :created? rs))) (str "created once: " pair)))
         (is (= (count pairs) (count (distinct (map :id results)))) "distinct ids across pairs")
         (doseq [id ids]
           (let [fs (graph/friends st id)]
             (is (= (map :to fs) (sort (map :to fs))) "ordered by the other's id")
             (is (= (count fs) (count (filter #(some #{id} %) pairs)))))))
       (finally (.shutdownNow pool) (s/close-store! st))))))

(deftest ^:integration restart-keeps-the-graph-and-ids-increase
  (pg/when-up
   (let [config (pg/fresh-config)
         [a b f] (let [st (postgres/open config)]
                   (try (let [a (graph/create-participant! st "Zoë \u0000 🚀")
                              b (graph/create-participant! st "Bo")]
                          [a b (graph/befriend! st (:id a) (:id b))])
                        (finally (s/close-store! st))))
         st (postgres/open config)]
     (try
       (is (= a (graph/participant st (:id a))) "a name with U+0000 survives (stored as UTF-8 bytes)")
       (is (= [{:id (:id f) :from (:id b) :to (:id a)}] (graph/friends st (:id b))))
       (is (= (assoc f :created? false) (graph/befriend! st (:id a) (:id b))))
       (let [c (graph/create-participant! st "C")]
         (is (> (:id c) (:id b)) "participant ids continue")
         (is (> (:id (graph/befriend! st (:id a) (:id c))) (:id f)) "friendship ids continue"))
       (is (= {:participants 3 :friendships 2} (select-keys (s/stats st) [:participants :friendships])))
       (is (true? (s/ready? st)))
       (let [{:keys [jdbc-url user password]} (pg/info)]
         (with-open [c (DriverManager/getConnection ^String jdbc-url ^String user ^String password)
                     rs (.executeQuery (.createStatement c)
                                       (str "SELECT version FROM " (:schema config) ".herald_schema_version"))]
           (is (= [1 2 3] (loop [acc []] (if (.next rs) (recur (conj acc (.getInt rs 1))) acc)))
               "each migration recorded, once, after two opens")))
       (finally (s/close-store! st)))
     (is (= ::s/closed (thrown-type #(graph/participant st 1))))
     (is (false? (s/ready? st))))))

(deftest bad-options-name-the-key
  (doseq [[opts k] [[{:pool-size 0} :pool-size] [{:jdbc-url "jdbc:mysql://x/y"} :jdbc-url]
                    [{:schema "x; DROP TABLE y"} :schema] [{:connection-timeout-ms "5"} :connection-timeout-ms]
                    [{:user nil} :user]]]
    (let [e (try (postgres/open opts) nil (catch clojure.lang.ExceptionInfo e e))]
      (is (= ::s/invalid (:type (ex-data e))) (pr-str opts))
      (is (= k (:key (ex-data e))))
      (is (re-find (re-pattern (str k)) (ex-message e)))))
  (let [e (try (s/open-store (merge roles/all-in-memory {:type :scale :graph {:type :postgres :pool-size -1}})) nil
               (catch clojure.lang.ExceptionInfo e e))]
    (is (= [:graph :pool-size] (:key (ex-data e))) "the composite prefixes the role")))

(deftest ^:integration an-unreachable-server-is-unavailable
  (let [port (with-open [s (java.net.ServerSocket. 0)] (.getLocalPort s))
        t0 (System/nanoTime)
        e (try (postgres/open {:jdbc-url (str "jdbc:postgresql://127.0.0.1:" port "/x") :connection-timeout-ms 500})
               nil (catch clojure.lang.ExceptionInfo e e))]
    (is (= ::s/unavailable (:type (ex-data e))) (ex-message e))
    (is (re-find #"refused" (ex-message e)) "the driver's reason is in the message")
    (is (< (/ (- (System/nanoTime) t0) 1e9) 10.0) "fails within the connection timeout, not forever")))

(deftest ^:integration sql-errors-are-ex-info
  (pg/when-up
   (let [st (postgres/open (pg/fresh-config))]
     (try
       (is (= ::s/invalid (thrown-type #(graph/befriend! st 1 1))) "checked before SQL")
       (let [e (try (graph/-befriend! st 3 3) nil (catch clojure.lang.ExceptionInfo e e))]
         (is (= :herald.feed.store.postgres/sql-error (:type (ex-data e))) "a violated CHECK constraint")
         (is (= "23514" (:sql-state (ex-data e)))))
       (finally (s/close-store! st))))))

;; ---------------------------------------------------------------------------------------------------
;; relationships (issue 11)

(deftest ^:integration relationships-survive-a-restart
  (pg/when-up
   (let [config (pg/fresh-config)
         [a b c d] (let [st (postgres/open config)]
                     (try (let [[a b c d] (map :id (repeatedly 4 #(graph/create-participant! st "p")))]
                            (graph/befriend! st a b) (graph/befriend! st a c) (graph/befriend! st a d)
                            (graph/unfriend! st a c)
                            (graph/mute! st a d)
                            (graph/block! st b a)
                            [a b c d])
                          (finally (s/close-store! st))))
         st (postgres/open config)]
     (try
       (is (= [d] (map :to (graph/friends st a))) "the unfriend and the block's unfriend are durable")
       (is (= [d] (graph/mutes st a)))
       (is (= [a] (graph/blocks st b)))
       (is (= #{b d} (graph/hidden st a)))
       (is (= #{a} (graph/hidden st b)))
       (is (= :herald.feed.store/blocked (thrown-type #(graph/befriend! st a b))))
       (is (true? (:created? (graph/befriend! st a c))))
       (finally (s/close-store! st))))))

(deftest ^:integration blocks-and-befriends-race-to-a-consistent-graph
  (pg/when-up
   (let [st (postgres/open (pg/fresh-config))
         pool (Executors/newFixedThreadPool 8)]
     (try
       (dotimes [_ 20]
         (let [[a b] (map :id (repeatedly 2 #(graph/create-participant! st "p")))
               start (CountDownLatch. 1)
               tasks (for [i (range 8)]
                       (.submit pool ^Callable (fn [] (.await start)
                                                 (try (if (zero? (long (mod i 4))) (graph/block! st a b) (graph/befriend! st b a))
                                                      (catch clojure.lang.ExceptionInfo e (:type (ex-data e)))))))
               tasks (vec tasks)]
           (.countDown start)
           (run! #(.get ^Future %) tasks)
           (is (= [b] (graph/blocks st a)))
           (is (= [] (graph/friends st a)) "after the block commits, no befriend succeeds: no friendship is left")
           (is (= [] (graph/friends st b)))))
       (finally (.shutdownNow pool) (s/close-store! st))))))
