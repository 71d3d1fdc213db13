(ns herald.feed.store.embedded.edits
  "The embedded store's edits and deletes of posts (issue 11). An edit rewrites the post's outbound row in place
  (same key: same time, same place in every feed); inbound rows are references to that row, so every inbound copy
  shows the edit at once. A delete removes the outbound row and turns the post's `posts` entry into a tombstone in
  one atomic write (with the removal of its pending fan-out record and of the inbound rows of its known
  recipients): an inbound row left behind, or written later by a fan-out in flight, names no outbound row and is
  never shown (the inbound read skips it). Each edit and delete writes, in the same atomic write, a `reindex`
  marker; the search index then follows under the index lock (the post's documents replaced by its current
  version, or removed), and the marker is cleared after the Lucene commit that holds the change. Markers left by
  a crash are applied again on open, so an acknowledged edit or delete reaches the index whatever happens."
  (:require [herald.feed.store.embedded.codec :as c]
            [herald.feed.store.embedded.indexing :as ix]
            [herald.feed.store.embedded.lucene :as lucene]
            [herald.feed.store.embedded.rocks :as rocks])
  (:import (java.util Map Set)
           (java.util.concurrent ConcurrentHashMap ConcurrentLinkedQueue LinkedBlockingQueue)
           (java.util.concurrent.atomic AtomicLong)
           (org.rocksdb ColumnFamilyHandle WriteBatch)))

(set! *warn-on-reflection* true)

(def ^:private ^"[B" no-bytes (byte-array 0))

(defn- cf ^ColumnFamilyHandle [db family] (get-in db [:cfs family]))

(defn index-state
  "The in-memory bookkeeping `idx` needs for edits: `:edited` (post ids an edit or delete took over from the
  indexing job), `:applied` (markers whose change is in the index writer), `:edit-retry` (changes whose index
  update failed) and `:edit-seq` (marker sequence)."
  [idx]
  (assoc idx :edited (ConcurrentHashMap.) :applied (ConcurrentLinkedQueue.)
         :edit-retry (LinkedBlockingQueue.) :edit-seq (AtomicLong.)))

(defn live-key
  "The outbound key of post `id`, nil when there is no such post or it is deleted (a tombstone)."
  ^bytes [db id]
  (when-let [v (rocks/get-bytes db :posts (c/long-key id))]
    (when-not (c/tombstone? v) v)))

(defn current-post
  "Post `id` as stored now, nil when there is none or it is deleted."
  [db id]
  (some-> (live-key db id) (->> (rocks/get-bytes db :outbound)) c/decode-post))

(defn deleted?
  "True when post `id` was deleted while the store is open (the fan-out then skips it)."
  [db id]
  (.contains ^Set (:deleted db) id))

(defn- reindex!
  "The search index follows the change of post `id` recorded by marker `mk`; a failure is counted and retried at
  the next commit (and, should that fail too, on the next open: the marker stays)."
  [db idx state id mk]
  (try
    (lucene/replace-post! idx id #(current-post db id) #(.containsKey (ix/unindexed idx) id))
    (.add ^ConcurrentLinkedQueue (:applied idx) mk)
    (catch Throwable e
      (ix/index-failed! state (str "re-indexing post " id) e)
      (.offer ^LinkedBlockingQueue (:edit-retry idx) [id mk]))))

(defn- marker ^bytes [idx id]
  (c/pair-key id (.incrementAndGet ^AtomicLong (:edit-seq idx))))

(defn edit!
  "Applies `changes` to post `id` under `lock` (the post's stripe); returns the edited post or nil."
  [db idx state lock id changes]
  (when-let [[p mk] (locking lock
                      (when-let [ok (live-key db id)]
                        (when-let [old (some-> (rocks/get-bytes db :outbound ok) c/decode-post)]
                          (let [p (merge old changes) mk (marker idx id)]
                            (with-open [wb (WriteBatch.)]
                              (.put wb (cf db :outbound) ok (c/encode-post p))
                              (.put wb (cf db :reindex) mk no-bytes)
                              (rocks/write! db wb))
                            [p mk]))))]
    (reindex! db idx state id mk)
    p))

(defn- pair-ids
  "The second ids of `id`'s entries in `family` (:friends, or :former: whose friendship with id ended)."
  [db family id]
  (mapv (fn [[k _]] (c/key-long k 8)) (rocks/scan db family (c/long-key id) #(c/owner-prefix? % id) Long/MAX_VALUE)))

(defn delete!
  "Deletes post `id` under `lock`: one atomic write removes its outbound row, its pending fan-out record and
  the inbound rows of everyone who may hold a copy (its pending recipients, its sender's current friends and
  former friends: a copy delivered before an unfriend or a block), and writes its tombstone and a reindex marker.
  Returns the post as it was, or nil."
  [db idx state lock id]
  (when-let [[p mk] (locking lock
                      (when-let [ok (live-key db id)]
                        (let [old (c/decode-post (rocks/get-bytes db :outbound ok))
                              pending (some-> (rocks/get-bytes db :fanout (c/long-key id)) c/decode-fanout second)
                              mk (marker idx id)]
                          (with-open [wb (WriteBatch.)]
                            (.delete wb (cf db :outbound) ok)
                            (.put wb (cf db :posts) (c/long-key id) (c/tombstone ok))
                            (.delete wb (cf db :fanout) (c/long-key id))
                            (doseq [r (distinct (concat pending (pair-ids db :friends (:from old))
                                                        (pair-ids db :former (:from old))))]
                              (.delete wb (cf db :inbound) (c/feed-key r (:ts old) id)))
                            (.put wb (cf db :reindex) mk no-bytes)
                            (rocks/write! db wb))
                          (.add ^Set (:deleted db) id)
                          (.remove ^Set (get-in db [:pending :fanout]) id)
                          [old mk])))]
    (reindex! db idx state id mk)
    p))

(defn catch-up!
  "On open, before the catch-up's commit: applies every reindex marker left (an edit or delete whose index change
  was not committed). Returns the count."
  [db idx]
  (let [n (volatile! 0)]
    (rocks/each! db :reindex (fn [k _]
                               (let [id (c/key-long k 0)]
                                 (lucene/replace-post! idx id #(current-post db id) (constantly false))
                                 (vswap! n inc))))
    @n))

(defn clear-markers!
  "On open, after the catch-up's commit: deletes every reindex marker."
  [db]
  (with-open [wb (WriteBatch.)]
    (rocks/each! db :reindex (fn [k _] (.delete wb (cf db :reindex) ^bytes k)))
    (when (pos? (.count wb)) (rocks/write! db wb))))

(defn commit-index!
  "The periodic (and closing) Lucene commit with the edits' bookkeeping: failed index changes retried first,
  then the commit (herald.feed.store.embedded.indexing/commit-index!), then the markers of every change applied
  before it cleared; post ids the indexing job can no longer hold are dropped from `:edited`."
  [db idx state post-lock post-ids]
  (let [^LinkedBlockingQueue q (:edit-retry idx)]
    (dotimes [_ (.size q)]
      (when-let [[id mk] (.poll q)] (reindex! db idx state id mk))))
  (let [^ConcurrentLinkedQueue applied (:applied idx)
        done (loop [acc []] (if-let [mk (.poll applied)] (recur (conj acc mk)) acc))]
    (try
      (ix/commit-index! idx post-lock post-ids)
      (catch Throwable t
        (run! #(.add applied %) done)
        (throw t)))
    (when (seq done)
      (with-open [wb (WriteBatch.)]
        (doseq [^bytes mk done] (.delete wb (cf db :reindex) mk))
        (rocks/write! db wb))))
  (let [^Map edited (:edited idx) unindexed (ix/unindexed idx)]
    (doseq [id (vec (.keySet edited))]
      (when-not (.containsKey unindexed id) (.remove edited id)))))
