(ns herald.feed.store.cache
  "A Caffeine cache (the Cache role) and a store decorator caching participant lookups and friend lists."
  (:require [herald.feed.store :as store])
  (:import (com.github.benmanes.caffeine.cache Caffeine)
           (com.github.benmanes.caffeine.cache.stats CacheStats)
           (java.time Duration)
           (java.util.function Function)))

(set! *warn-on-reflection* true)

(deftype CaffeineCache [^com.github.benmanes.caffeine.cache.Cache cache]
  store/Cache
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

(deftype CachedStore [inner cache]
  store/ParticipantStore
  (-create-participant! [_ name] (store/-create-participant! inner name))
  (-participant [_ id] (store/-fetch cache [:participant id] #(store/-participant inner id)))

  store/FriendStore
  (-befriend! [_ a b]
    (let [r (store/-befriend! inner a b)]
      ;; always: a racing caller that got :created? false must not read a list cached before the write
      (store/-invalidate! cache [:friends a])
      (store/-invalidate! cache [:friends b])
      r))
  (-friends [_ id] (store/-fetch cache [:friends id] #(store/-friends inner id)))

  store/OutboundStore
  (-publish! [_ post recipients] (store/-publish! inner post recipients))
  (-outbound [_ sender opts] (store/-outbound inner sender opts))
  (-post [_ id] (store/-post inner id))

  store/InboundStore
  (-deliver! [_ recipient post] (store/-deliver! inner recipient post))
  (-fan-out! [_ post recipients] (store/-fan-out! inner post recipients))
  (-inbound [_ recipient opts] (store/-inbound inner recipient opts))
  (-pending-fanouts [_] (store/-pending-fanouts inner))
  (-complete-fanout! [_ post-id] (store/-complete-fanout! inner post-id))

  store/BatchFanOut
  (-fan-out-all! [_ deliveries]
    (if (store/batch-fan-out? inner)
      (store/-fan-out-all! inner deliveries)
      (doseq [{:keys [post recipients]} deliveries] (store/fan-out! inner post recipients))))

  store/LoggedFeeds
  (-put-outbound! [_ post] (store/-put-outbound! inner post))
  (-deliver-all! [_ deliveries] (store/-deliver-all! inner deliveries))

  store/SearchIndex
  (-index! [_ post] (store/-index! inner post))
  (-index-batch! [_ posts] (store/-index-batch! inner posts))
  (-search [_ keywords opts] (store/-search inner keywords opts))
  (-refresh-search! [_] (store/-refresh-search! inner))

  store/PostEdits
  (-edit-post! [_ id changes] (store/-edit-post! inner id changes))
  (-delete-post! [_ id] (store/-delete-post! inner id))

  store/LoggedEdits
  (-delete-outbound! [_ post] (store/-delete-outbound! inner post))
  (-apply-changes! [_ changes] (store/-apply-changes! inner changes))

  store/SearchEdits
  (-reindex! [_ post] (store/-reindex! inner post))
  (-unindex! [_ id] (store/-unindex! inner id))

  store/Lifecycle
  (-close! [_] (store/-close! inner))
  (-ready? [_] (store/-ready? inner))
  (-stats [_]
    (into (store/-stats inner)
          (map (fn [[k v]] [(keyword (str "cache-" (name k))) v]))
          (store/-cache-stats cache))))

(defn unwrap
  "The store behind `s` when it is a `CachedStore`, else `s` (to ask which roles the backend itself has)."
  [s]
  (if (instance? CachedStore s) (.-inner ^CachedStore s) s))

(defn cached-store
  "Wraps store so that participant lookups and friend lists are served from a Caffeine cache, invalidated
  on befriend. opts: see caffeine-cache."
  [inner opts]
  (CachedStore. inner (caffeine-cache opts)))
