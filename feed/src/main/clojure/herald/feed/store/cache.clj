(ns herald.feed.store.cache
  "The cache role: its contract (`Cache`) and its in-process backend, a Caffeine cache (participant lookups, friend
  lists and hidden sets, see herald.feed.store.graph; the :scale profile's Redis backend is herald.feed.store.redis)."
  (:import (com.github.benmanes.caffeine.cache Caffeine)
           (com.github.benmanes.caffeine.cache.stats CacheStats)
           (java.time Duration)
           (java.util.function Function)))

(set! *warn-on-reflection* true)

(defprotocol Cache
  "A bounded cache of derived values (participant lookups, friend lists). Guarantees: -fetch returns the
  cached value or loads, caches and returns it (nil is not cached); -invalidate! waits for an in-flight
  load of the key, so a value loaded before a write is never served after the write's invalidation."
  (-fetch [c k load] "The value for k, calling (load) on a miss.")
  (-invalidate! [c k] "Drops k.")
  (-cache-stats [c] "A map of counters: :hits :misses :evictions :size."))

(deftype CaffeineCache [^com.github.benmanes.caffeine.cache.Cache cache]
  Cache
  (-fetch [_ k load] (.get cache k (reify Function (apply [_ _] (load)))))
  (-invalidate! [_ k] (.invalidate cache k))
  (-cache-stats [_]
    (let [^CacheStats st (.stats cache)]
      {:hits (.hitCount st) :misses (.missCount st) :evictions (.evictionCount st)
       :size (.estimatedSize cache)})))

(defn caffeine-cache
  "A bounded in-process cache.

  | key              | type | default | meaning                                     |
  |------------------|------|---------|---------------------------------------------|
  | :max-size        | long | 100000  | most entries kept (size-based eviction)     |
  | :expire-after-ms | long | nil     | drop entries this long after they are written |"
  [{:keys [max-size expire-after-ms] :or {max-size 100000} :as opts}]
  (when-not (and (int? max-size) (pos? (long max-size)))
    (throw (ex-info (str ":max-size must be a positive integer, got " (pr-str max-size))
                    {:type :herald.feed.store/invalid :key :max-size :value max-size})))
  (when-not (or (nil? expire-after-ms) (and (int? expire-after-ms) (pos? (long expire-after-ms))))
    (throw (ex-info (str ":expire-after-ms must be a positive integer, got " (pr-str expire-after-ms))
                    {:type :herald.feed.store/invalid :key :expire-after-ms :value expire-after-ms})))
  (let [^Caffeine b (-> (Caffeine/newBuilder) (.maximumSize (long max-size)) (.recordStats))]
    (when expire-after-ms (.expireAfterWrite b (Duration/ofMillis expire-after-ms)))
    (CaffeineCache. (.build b))))
