(ns herald.feed.store.embedded.indexing
  "The embedded store's search bookkeeping: which published posts are not in Lucene yet, claims so each is indexed once, the commit watermark, failure counting and retries."
  (:require [herald.feed.store.cursor :as cursor]
            [herald.feed.store.embedded.lucene :as lucene]
            [herald.feed.store.text :as text])
  (:import (java.util Map$Entry)
           (java.util.concurrent ConcurrentSkipListMap LinkedBlockingQueue)
           (java.util.concurrent.atomic AtomicLong)
           (org.slf4j Logger LoggerFactory)))

(set! *warn-on-reflection* true)

(def ^:private ^Logger log (LoggerFactory/getLogger "herald.feed.store"))

;; Search bookkeeping, in memory: idx :unindexed maps the id of every post published since open and not yet
;; added to Lucene to a claim flag (false: waiting, true: being indexed); :unindexed-count counts it. A
;; commit records the watermark: the highest id below every unindexed one (see commit-index!). Posts
;; above the watermark of the last commit are checked and indexed on open (catch-up-index!).

(defn unindexed
  "Post id -> claim flag (false: waiting, true: being indexed) of the posts not yet in Lucene."
  ^ConcurrentSkipListMap [idx] (:unindexed idx))

(defn track-unindexed!
  "Records post id as published and not yet indexed."
  [idx id]
  (.put (unindexed idx) id Boolean/FALSE)
  (.incrementAndGet ^AtomicLong (:unindexed-count idx)))

(defn untrack!
  "Forgets post id (indexed, or known to be in the index)."
  [idx id]
  (when (.remove (unindexed idx) id) (.decrementAndGet ^AtomicLong (:unindexed-count idx))))

(defn claim!
  "True for the one caller that takes post id for indexing: it must be unindexed and not claimed."
  [idx id]
  (.replace (unindexed idx) id Boolean/FALSE Boolean/TRUE))

(defn watermark
  "The highest post id w such that every post up to w is in the index writer: below the lowest unindexed
  id, else the last id assigned. Ids are assigned and tracked under post-lock, read here under it too."
  ^long [idx post-lock ^AtomicLong post-ids]
  (let [hi (locking post-lock (.get post-ids))
        ^Map$Entry lo (.firstEntry (unindexed idx))]
    (if lo (min hi (dec (long (.getKey lo)))) hi)))

(defn commit-index!
  "Commits Lucene with the watermark computed before the commit starts."
  [idx post-lock post-ids]
  (lucene/commit! idx (watermark idx post-lock post-ids)))

(defn index-failed!
  "Counts an index failure and marks the index degraded (ready? false); logs the first failure of a streak
  with its cause."
  [state what ^Throwable e]
  (let [[old _] (swap-vals! state #(-> % (update :index-errors (fnil inc 0))
                                       (assoc :index-failure (str what ": " (ex-message e)))))]
    (when-not (:index-failure old)
      (.error log (str "search index failure while " what " (search degraded, /ready false until it recovers;"
                       " failed posts stay below the index watermark and are indexed on the next open)") e))))

(defn index-ok!
  "Clears the degraded state after a successful index operation (logs the recovery)."
  [state]
  (when (:index-failure @state)
    (let [[old _] (swap-vals! state dissoc :index-failure)]
      (when (:index-failure old) (.info log "search index recovered")))))

(defn index-posts!
  "Indexes the posts not indexed yet (each id once, also under concurrent calls). A failed post is released,
  queued for a retry before the next commit (beyond the queue's bound, the watermark brings it back on
  open) and counted; it never fails the others."
  [idx state posts]
  (loop [mine (into [] (filter #(claim! idx (:id %))) posts)]
    (when (seq mine)
      (let [failed (try (lucene/add-posts! idx mine) nil
                        (catch Exception e [(long (:added (ex-data e) 0)) (or (ex-cause e) e)]))
            n (if failed (first failed) (count mine))]
        (doseq [p (subvec mine 0 n)] (untrack! idx (:id p)))
        (if-not failed
          (index-ok! state)
          (let [p (nth mine n)]
            (.replace (unindexed idx) (:id p) Boolean/TRUE Boolean/FALSE)
            (.offer ^LinkedBlockingQueue (:retry idx) p)
            (index-failed! state (str "indexing post " (:id p)) (second failed))
            (recur (subvec mine (inc n)))))))))

(defn retry-failed!
  "Indexes again the posts whose indexing failed (each at most once per call; a new failure queues it again)."
  [idx state]
  (let [^LinkedBlockingQueue q (:retry idx)
        posts (loop [acc [] n (.size q)]
                (if-let [p (when (pos? n) (.poll q))] (recur (conj acc p) (dec n)) acc))]
    (run! #(index-posts! idx state [%]) posts)))

(defn- counted
  "(f), counting and logging a failure, which throws ex-info :herald.feed.store/unavailable."
  [state f]
  (try
    (f)
    (catch Exception e
      (let [n (:search-errors (swap! state update :search-errors (fnil inc 0)))]
        (when (= 1 n) (.error log "search failed (counted in the store's :search-errors; first failure logged)" e)))
      (throw (ex-info (str "search is unavailable: " (ex-message e))
                      {:type :herald.feed.store/unavailable} e)))))

(defn search
  "Sender ids of the posts matching every term of `keywords`, newest first; counts and logs a failure and
  throws ex-info :herald.feed.store/unavailable."
  [idx state keywords limit]
  (counted state #(lucene/search idx (text/terms keywords) limit)))

(defn search-page
  "A page {:items [{:id :from}] :next cursor} of the newest posts matching every term of `keywords`, after the
  cursor's post id, none of a sender in :hidden (opts {:limit :before :hidden}); `ts-of` gives a post id's ts for the :next cursor. Failures as
  `search`."
  [idx state keywords {:keys [limit before hidden]} ts-of]
  (let [below (when before (second (cursor/decode before)))
        hits (counted state #(lucene/search-page idx (text/terms keywords) (inc (long limit)) below hidden))
        more? (> (count hits) (long limit))
        shown (if more? (pop hits) hits)]
    {:items shown :next (when more? (let [id (:id (peek shown))] (cursor/encode (or (ts-of id) 0) id)))}))
