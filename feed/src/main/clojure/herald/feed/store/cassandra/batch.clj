(ns herald.feed.store.cassandra.batch
  "Requests of the :feeds backend on Cassandra: a bounded number in flight, and rows written as unlogged batches
  grouped by replica set (one request per replica set and chunk of rows)."
  (:require [herald.feed.store.cassandra.session :as cs])
  (:import (com.datastax.oss.driver.api.core CqlSession)
           (com.datastax.oss.driver.api.core.cql BatchStatement BatchableStatement DefaultBatchType Statement)
           (com.datastax.oss.driver.api.core.metadata TokenMap)
           (java.nio.charset StandardCharsets)
           (java.util.concurrent Semaphore)
           (java.util.function BiConsumer)))

(set! *warn-on-reflection* true)

(defn run-bounded!
  "Runs statements asynchronously, at most n in flight, and waits for all; returns (f result-set) of each, in
  order. The first failure is thrown as ex-info once every statement has finished."
  [session stmts n what f]
  (let [sem (Semaphore. (int n))
        release (reify BiConsumer (accept [_ _ _] (.release sem)))
        apply-f (reify java.util.function.Function (apply [_ rs] (f rs)))]
    (cs/await-all what (mapv (fn [s]
                               (.acquire sem)
                               (-> (cs/execute-async session s) (.whenComplete release) (.thenApply apply-f)))
                             stmts))))

(def batch-statements
  "Most statements in one unlogged batch."
  64)

(def batch-bytes
  "Most bytes of rows (their text in UTF-8, plus keys) in one unlogged batch: under Cassandra's default
  batch_size_fail_threshold (50 KiB); a row larger than this goes alone."
  32768)

(defn unlogged
  "`stmts` as ONE request: the statement itself when alone, else an unlogged batch (not atomic, like the
  separate upserts it replaces; idempotent). Each request costs the server a dispatch and a wake-up of its
  request threads whatever it holds (bench/results/feed-scale.md, bench/sizing/cassandra-batches.clj)."
  [stmts]
  (if (next stmts)
    (BatchStatement/newInstance DefaultBatchType/UNLOGGED
                                ^"[Lcom.datastax.oss.driver.api.core.cql.BatchableStatement;"
                                (into-array BatchableStatement stmts))
    (first stmts)))

(defn- replicas
  "The replica set of a bound statement's partition (the driver's token map), nil when the driver has none."
  [^CqlSession session ^Statement s]
  (let [tm (.getTokenMap (.getMetadata session))]
    (when (.isPresent tm)
      (.getReplicas ^TokenMap (.get tm) (.getRoutingKeyspace s) (.getRoutingKey s)))))

(defn chunks
  "The statements of [statement bytes] pairs in runs of at most batch-statements and batch-bytes."
  [pairs]
  (loop [ps (seq pairs) cur [] n 0 acc []]
    (if-let [[s b] (first ps)]
      (if (and (seq cur) (or (>= (count cur) (long batch-statements)) (> (+ n (long b)) (long batch-bytes))))
        (recur ps [] 0 (conj acc cur))
        (recur (next ps) (conj cur s) (+ n (long b)) acc))
      (cond-> acc (seq cur) (conj cur)))))

(defn write-grouped!
  "Writes the statements of [statement bytes] pairs as unlogged batches of the statements whose partitions have
  the same replicas (one request per replica set and chunk: the driver routes a batch to a replica of its first
  statement, so no batch makes its coordinator forward rows), n requests in flight; throws the first failure
  once every request has finished."
  [session pairs n what]
  (run-bounded! session (into [] (comp (map val) (mapcat chunks) (map unlogged))
                              (group-by #(replicas session (first %)) pairs))
                n what identity))

(defn text-bytes
  "The bytes a row of post takes in a batch, about: its text in UTF-8 and its keys."
  ^long [{:keys [occurred subject story]}]
  (+ 64 (reduce + 0 (map #(alength (.getBytes (str %) StandardCharsets/UTF_8)) [occurred subject story]))))
