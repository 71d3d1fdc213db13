(ns herald.feed.store.redis-test
  "The Redis cache on a real server: the storage contract through the :scale store (also with PostgreSQL for the
  graph), invalidation racing loads, TTL, EDN values, Redis down, bad options."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed.servers.postgres :as pg]
            [herald.feed.servers.redis :as rd]
            [herald.feed.store :as s]
            [herald.feed.store.cache :as cache]
            [herald.feed.store.lifecycle :as lifecycle]
            [herald.feed.store.contract :as contract :refer [thrown-type]]
            [herald.feed.store.redis :as redis]
            [herald.feed.store.scale.roles :as roles])
  (:import (java.util.concurrent CountDownLatch Executors Future TimeUnit)))

(set! *warn-on-reflection* true)

(defn- open-scale-redis [] (s/open-store (merge roles/all-in-memory {:type :scale :cache (assoc (rd/fresh-config) :type :redis)})))

(defn- open-scale-both []
  (s/open-store (merge roles/all-in-memory {:type :scale :graph (assoc (pg/fresh-config) :type :postgres)
                                            :cache (assoc (rd/fresh-config) :type :redis)})))

(defmacro ^:private contract-when [up prefix open]
  `(do ~@(for [k (keys contract/checks)]
           `(deftest ~(symbol (str prefix "-" k))
              (~up (contract/run-check ~open s/close-store! (get contract/checks ~k)))))))

(contract-when rd/when-up scale-redis open-scale-redis)

(defmacro ^:private both-up [& body] `(rd/when-up (pg/when-up ~@body)))

(contract-when both-up scale-postgres-redis open-scale-both)

(deftest ^:integration values-round-trip-as-edn-and-nil-is-not-cached
  (rd/when-up
   (let [c (redis/open (rd/fresh-config))
         loads (atom 0)
         v {:id 7 :name "Zoë 🚀 \u0000 \"q\" \\/" :friends [{:id 1 :from 7 :to 9}] :n 12.5 :k :kw}]
     (try
       (is (= v (cache/-fetch c [:participant 7] #(do (swap! loads inc) v))))
       (is (= v (cache/-fetch c [:participant 7] #(do (swap! loads inc) :wrong))) "served from Redis")
       (is (= 1 @loads))
       (is (nil? (cache/-fetch c [:participant 8] #(do (swap! loads inc) nil))))
       (is (nil? (cache/-fetch c [:participant 8] #(do (swap! loads inc) nil))))
       (is (= 3 @loads) "nil is not cached")
       (cache/-invalidate! c [:participant 7])
       (is (= :new (cache/-fetch c [:participant 7] (constantly :new))) "reloaded after invalidation")
       (is (= {:hits 1 :misses 4} (select-keys (cache/-cache-stats c) [:hits :misses])))
       (is (pos? (:size (cache/-cache-stats c))))
       (finally (lifecycle/-close! c))))))

(deftest ^:integration a-load-that-started-before-an-invalidation-is-not-kept
  (rd/when-up
   (let [c (redis/open (rd/fresh-config))
         source (atom :old)
         loaded (CountDownLatch. 1)
         go-on (CountDownLatch. 1)
         slow (future (cache/-fetch c :k (fn [] (let [v @source] (.countDown loaded) (.await go-on) v))))]
     (try
       (is (.await loaded 10 TimeUnit/SECONDS))
       (reset! source :new)            ; the write ...
       (cache/-invalidate! c :k)            ; ... and its invalidation, while the slow load holds :old
       (.countDown go-on)
       (is (= :old @slow) "the racing caller gets what it loaded")
       (is (= :new (cache/-fetch c :k #(deref source))) "but :old was not stored: the next fetch loads :new")
       (is (= :new (cache/-fetch c :k (constantly :wrong))) "and keeps it")
       (finally (lifecycle/-close! c))))))

(deftest ^:integration concurrent-loads-and-invalidations-end-fresh
  (rd/when-up
   (let [c (redis/open (assoc (rd/fresh-config) :pool-size 16))
         source (atom (vec (repeat 8 0)))
         pool (Executors/newFixedThreadPool 8)
         readers (for [_ (range 6)]
                   (.submit pool ^Callable
                            (fn [] (dotimes [i 400]
                                     (let [k (mod i 8)] (cache/-fetch c k #(get @source k)))))))
         writers (for [_ (range 2)]
                   (.submit pool ^Callable
                            (fn [] (dotimes [i 200]
                                     (let [k (rand-int 8)]
                                       (swap! source update k inc)
                                       (cache/-invalidate! c k))))))]
     (try
       (run! #(.get ^Future %) (doall (concat readers writers)))
       (doseq [k (range 8)]
         (is (= (get @source k) (cache/-fetch c k #(get @source k))) (str "key " k " is fresh after the last write")))
       (finally (.shutdownNow pool) (lifecycle/-close! c))))))

(deftest ^:integration opening-drops-the-values-of-the-previous-run
  (rd/when-up
   (let [config (rd/fresh-config)
         c1 (redis/open config)]
     ;; a crash between a write and its invalidation would leave this value stale
     (cache/-fetch c1 [:friends 1] (constantly [:before-the-crash]))
     (cache/-fetch c1 [:friends 2] (constantly [:before-the-crash]))
     (let [c2 (redis/open (assoc config :clear-on-open? false))
           kept (cache/-fetch c2 [:friends 1] (constantly [:after]))
           c3 (redis/open config)]
       (try
         (is (= [:before-the-crash] kept) "kept without :clear-on-open?")
         (is (= [:after] (cache/-fetch c3 [:friends 1] (constantly [:after]))) "dropped on open")
         (is (= [:after] (cache/-fetch c3 [:friends 2] (constantly [:after]))))
         (is (= [:after] (cache/-fetch c1 [:friends 2] (constantly [:wrong]))) "the value read since is cached again")
         (finally (run! lifecycle/-close! [c1 c2 c3])))))))

(deftest ^:integration values-expire-after-the-ttl
  (rd/when-up
   (let [c (redis/open (assoc (rd/fresh-config) :ttl-ms 1000))]
     (try
       (cache/-fetch c :k (constantly 1))
       (is (= 1 (cache/-fetch c :k (constantly 2))))
       (Thread/sleep 1300)
       (is (= 2 (cache/-fetch c :k (constantly 2))) "expired, loaded again")
       (finally (lifecycle/-close! c))))))

(deftest ^:integration an-unreachable-server-fails-the-open
  (let [port (with-open [s (java.net.ServerSocket. 0)] (.getLocalPort s))
        e (try (redis/open {:uri (str "redis://user:secret@127.0.0.1:" port) :timeout-ms 200}) nil
               (catch clojure.lang.ExceptionInfo e e))]
    (is (= ::s/unavailable (:type (ex-data e))))
    (is (= :uri (:key (ex-data e))))
    (is (not (re-find #"secret" (ex-message e))) "the password is not in the message")))

(deftest ^:integration redis-going-down-loads-directly-and-invalidation-fails-loudly
  (let [{:keys [uri stop error]} (rd/start-own!)]
    (if error
      (clojure.test/do-report {:type :skip :message (str "Redis could not start: " error)})
      (let [c (redis/open {:uri uri :timeout-ms 200})]
        (try
          (is (= 1 (cache/-fetch c :k (constantly 1))))
          (is (= 1 (cache/-fetch c :k (constantly 2))) "cached")
          (stop)
          (is (= 5 (cache/-fetch c :k (constantly 5))) "served by the loader")
          (is (= 1 (:errors (cache/-cache-stats c))))
          (is (= ::s/unavailable (thrown-type #(cache/-invalidate! c :k))))
          (finally (lifecycle/-close! c) (try (stop) (catch Exception _ nil))))
        (is (= ::s/closed (thrown-type #(cache/-fetch c :k (constantly 1)))))))))

(deftest bad-options-name-the-key
  (doseq [[opts k] [[{:uri "http://x"} :uri] [{:ttl-ms 5} :ttl-ms] [{:prefix ""} :prefix] [{:prefix "a*"} :prefix]
                    [{:clear-on-open? "yes"} :clear-on-open?] [{:value-format :json} :value-format]
                    [{:pool-size 0} :pool-size] [{:timeout-ms "1"} :timeout-ms]]]
    (let [e (try (redis/open opts) nil (catch clojure.lang.ExceptionInfo e e))]
      (is (= ::s/invalid (:type (ex-data e))) (pr-str opts))
      (is (= k (:key (ex-data e))))))
  (is (= [:cache :ttl-ms] (:key (ex-data (try (s/open-store (merge roles/all-in-memory {:type :scale :cache {:type :redis :ttl-ms 0}})) nil
                                              (catch clojure.lang.ExceptionInfo e e)))))))

(deftest ^:integration values-are-binary-and-edn-values-stay-readable
  (rd/when-up
   (let [config (assoc (rd/fresh-config) :clear-on-open? false)
         v {:id 7 :name "Zoë 🚀" :friends [1 2 3] :hidden #{4 5} :n 12.5 :k :kw :r 1/3}
         old (redis/open (assoc config :value-format :edn))
         new (redis/open config)
         raw (fn [k] (with-open [j (redis.clients.jedis.Jedis. (java.net.URI. ^String (:uri config)))]
                       (.get j ^bytes (.getBytes (str (:prefix config) "v:" (pr-str k)) "UTF-8"))))]
     (try
       (is (= v (cache/-fetch new [:participant 1] (constantly v))))
       (is (= (unchecked-byte 0xB1) (first (raw [:participant 1]))) "written in the record codec")
       (is (= v (cache/-fetch old [:participant 2] (constantly v))))
       (is (= (seq (redis/encode-value :edn v)) (seq (raw [:participant 2]))) "written as EDN text, as before")
       (is (= v (cache/-fetch new [:participant 2] (constantly :wrong))) "an EDN value is read by the binary writer")
       (is (= v (cache/-fetch old [:participant 1] (constantly :wrong))) "and a binary value by the EDN writer")
       (is (= {:hits 2 :misses 2} (merge-with + (select-keys (cache/-cache-stats old) [:hits :misses])
                                              (select-keys (cache/-cache-stats new) [:hits :misses]))))
       (finally (run! lifecycle/-close! [old new]))))))
