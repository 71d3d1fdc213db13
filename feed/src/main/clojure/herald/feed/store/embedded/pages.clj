(ns herald.feed.store.embedded.pages
  "The embedded store's feed pages on RocksDB: outbound rows as stored, inbound rows as references resolved against
  outbound (so edits show at once), the references of deleted posts skipped and removed."
  (:require [herald.feed.store.cursor :as cursor]
            [herald.feed.store.embedded.codec :as c]
            [herald.feed.store.embedded.rocks :as rocks])
  (:import (org.rocksdb RocksDBException WriteBatch)
           (org.slf4j Logger LoggerFactory)))

(set! *warn-on-reflection* true)

(def ^:private ^Logger log (LoggerFactory/getLogger "herald.feed.store"))

(defn- drop-dangling!
  "Removes inbound keys `ks` whose post is deleted (their outbound row is gone for good: post ids are never reused
  and an edit rewrites the row in place), in one write: copies a delete could not reach (a fan-out in flight that
  wrote after it, a store written before deletes reached former friends). Best effort: a failure is logged and the
  next read tries again; the copies stay unseen meanwhile."
  [db ks]
  (when (seq ks)
    (try
      (with-open [wb (WriteBatch.)]
        (doseq [^bytes k ks] (.delete wb ^org.rocksdb.ColumnFamilyHandle (get-in db [:cfs :inbound]) k))
        (rocks/write! db wb))
      (catch RocksDBException e
        (.warn log (str "could not remove " (count ks) " inbound copies of deleted posts: " (.getMessage e)))))))

(defn- scan-page
  "[rows more?] of owner's feed in family: up to limit [key value] rows after the cursor."
  [db family owner {:keys [limit before]}]
  (let [start (if before
                (let [[ts id] (cursor/decode before)] (c/feed-key owner ts (inc (long id))))
                (c/long-key owner))
        rows (rocks/scan db family start #(c/owner-prefix? % owner) (inc (long limit)))]
    [(take limit rows) (> (count rows) (long limit))]))

(defn outbound-page
  "A page {:items :next} of owner's outbound feed (opts {:limit :before})."
  [db owner opts]
  (let [[rows more?] (scan-page db :outbound owner opts)
        items (mapv (fn [[_ v]] (c/decode-post v)) rows)]
    {:items items :next (cursor/for-page items more?)}))

(defn inbound-page
  "A page {:items :next} of owner's inbound feed (opts {:limit :before}). Inbound entries are references (the value
  is the sender): the posts are read from outbound, so an edit shows at once; an entry whose post is deleted names
  no outbound row: it is skipped (the scan goes on until the page is full) and removed (`drop-dangling!`)."
  [db owner {:keys [limit before]}]
  (let [limit (long limit)]
    (loop [start (if before
                   (let [[ts id] (cursor/decode before)] (c/feed-key owner ts (inc (long id))))
                   (c/long-key owner))
           acc []]
      (let [want (- (inc limit) (count acc))
            rows (rocks/scan db :inbound start #(c/owner-prefix? % owner) want)
            oks (map (fn [[^bytes k v]] (c/feed-key (c/key-long v 0) (c/feed-key-ts k) (c/key-long k 16))) rows)
            posts (rocks/multi-get db :outbound oks)
            _ (drop-dangling! db (keep (fn [[[k _] p]] (when (nil? p) k)) (map vector rows posts)))
            acc (into acc (keep #(some-> ^bytes % c/decode-post)) posts)]
        (if (or (> (count acc) limit) (< (count rows) want))
          (let [items (vec (take limit acc))]
            {:items items :next (cursor/for-page items (> (count acc) limit))})
          (let [^bytes k (first (peek rows))]
            (recur (c/feed-key owner (c/feed-key-ts k) (inc (c/key-long k 16))) acc)))))))
