(ns herald.feed.store.scale.indexing
  "The :scale store's search bookkeeping: which published posts wait for indexing, the index mark kept by the
  search backend (spi/IndexProgress), and the catch-up from the feeds backend's post log on open."
  (:require [herald.feed.store.feeds :as feeds]
            [herald.feed.store.search :as search]
            [herald.feed.store.scale.spi :as spi])
  (:import (java.util.concurrent ConcurrentHashMap ConcurrentSkipListMap)
           (java.util.concurrent.atomic AtomicLong)
           (org.slf4j Logger LoggerFactory)))

(set! *warn-on-reflection* true)

(def ^:private ^Logger log (LoggerFactory/getLogger "herald.feed.store"))

;; In memory, per open store:
;;   :waiting   ts -> [post id, System/nanoTime at publish] of every post published since open and not yet indexed
;;              (ts is unique per store);
;;   :in-flight token -> floor: a publish in progress, floor = the highest ts returned before it started (its
;;              post's ts is above the floor, as the feeds backend's ts strictly increase);
;;   :hi        the highest ts returned by a publish (or found by the catch-up);
;;   :marked    the mark last stored in the search backend.
;; The mark is the highest ts below which nothing waits: min(hi, lowest waiting ts - 1, lowest floor).

(defn tracker
  "A new bookkeeping map, every post up to ts `hi` known indexed."
  [^long hi]
  {:waiting (ConcurrentSkipListMap.) :in-flight (ConcurrentHashMap.)
   :hi (AtomicLong. hi) :marked (AtomicLong. hi)})

(defn publishing!
  "Registers a publish about to start; returns the token to pass to published! or abandoned!."
  [{:keys [^ConcurrentHashMap in-flight ^AtomicLong hi]}]
  (let [token (Object.)]
    (.put in-flight token (.get hi))
    token))

(defn published!
  "Records post (just published) as waiting for indexing and ends the publish of token."
  [{:keys [^ConcurrentSkipListMap waiting ^ConcurrentHashMap in-flight ^AtomicLong hi]} token post]
  (let [ts (long (:ts post))]
    (.put waiting ts [(:id post) (System/nanoTime)])
    (.accumulateAndGet hi ts (reify java.util.function.LongBinaryOperator (applyAsLong [_ a b] (max a b))))
    (.remove in-flight token)
    post))

(defn abandoned!
  "Ends the publish of token that failed (nothing was stored, or nothing acknowledged)."
  [{:keys [^ConcurrentHashMap in-flight]} token]
  (.remove in-flight token))

(defn indexed!
  "Drops posts (now in the search backend) from the waiting set."
  [{:keys [^ConcurrentSkipListMap waiting]} posts]
  (doseq [p posts] (.remove waiting (long (:ts p)))))

(defn waiting-count
  "Posts published since open and not yet indexed."
  ^long [{:keys [^ConcurrentSkipListMap waiting]}]
  (.size waiting))

(defn mark
  "The highest ts below which no post waits for indexing (see the comment above)."
  ^long [{:keys [^ConcurrentSkipListMap waiting ^ConcurrentHashMap in-flight ^AtomicLong hi]}]
  ;; read hi first, then the publishes in flight, then the waiting posts: a post at or below hi is either still
  ;; in flight (its floor is below its ts) or already waiting (published! puts it there before ending)
  (let [h (.get hi)
        floor (reduce (fn [^long m f] (min m (long f))) h (vals in-flight))
        lo (.firstEntry waiting)]
    (if lo (min floor (dec (long (.getKey lo)))) floor)))

(def ^:private retry-batch
  "Most posts indexed again per retry."
  500)

(defn retry-stale!
  "Indexes the waiting posts published more than retry-ms ago (read back from feeds): their indexing failed, or
  nobody asked for it; without this they would wait for the next open's catch-up. Returns how many were indexed;
  a failure is left for the next call (and to the catch-up)."
  [{:keys [^ConcurrentSkipListMap waiting] :as t} feeds search ^long retry-ms]
  (let [cutoff (- (System/nanoTime) (* retry-ms 1000000))
        ;; ts order is publish order but for the few publishes in flight together: stop at the first fresh one
        stale (into [] (comp (take-while (fn [[_ [_ nanos]]] (< (- (long nanos) cutoff) 0)))
                             (map (fn [[_ [id]]] id))
                             (take retry-batch))
                    waiting)]
    (if (empty? stale)
      0
      (let [posts (into [] (keep #(feeds/-post feeds %)) stale)]
        (search/-index-batch! search posts)
        (indexed! t posts)
        (.info log (str "indexed " (count posts) " posts that had waited for search more than " retry-ms " ms"))
        (count posts)))))

(defn advance!
  "Stores the current mark in the search backend when it moved; returns it."
  [{:keys [^AtomicLong marked] :as t} search]
  (let [m (mark t)]
    (when (> m (.get marked))
      (spi/-set-indexed-through! search m)
      (.set marked m))
    m))

(defn catch-up!
  "Indexes every post of feeds above the search backend's mark, batch-size posts per call, advancing the mark
  after each batch. Returns [mark-after posts-indexed]. Throws what the backends throw."
  [feeds search batch-size]
  (let [t0 (System/nanoTime)
        start (long (spi/-indexed-through search))]
    (loop [m start n 0]
      (let [posts (vec (spi/-posts-after feeds m batch-size))]
        (if (empty? posts)
          (do (when (pos? n)
                (.info log (str "search caught up: " n " posts after ts " start " indexed in "
                                (quot (- (System/nanoTime) t0) 1000000) " ms")))
              [m n])
          (let [top (long (:ts (peek posts)))]
            (when-not (> top m)
              (throw (ex-info (str "the :feeds backend's -posts-after " m " returned no post after " m)
                              {:type :herald.feed.store/invalid :key :feeds :value top})))
            (search/-index-batch! search posts)
            (spi/-set-indexed-through! search top)
            (recur top (+ n (count posts)))))))))
