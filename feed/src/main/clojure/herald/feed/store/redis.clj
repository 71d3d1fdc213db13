(ns herald.feed.store.redis
  "The Cache role on Redis (Jedis): values in herald.flow's binary record codec (or EDN) with a TTL; a per-key
  version and conditional sets in Lua scripts make -invalidate! exact under concurrent loads: the :scale store's
  :cache role."
  (:require [clojure.string :as str]
            [herald.feed.outage :as outage]
            [herald.feed.store.cache :as cache]
            [herald.feed.store.lifecycle :as lifecycle])
  (:import (herald.flow.log RecordCodec)
           (java.net URI URISyntaxException)
           (java.nio.charset StandardCharsets)
           (java.util List)
           (java.util.concurrent.atomic AtomicBoolean AtomicLong)
           (redis.clients.jedis Jedis JedisPool JedisPoolConfig)
           (redis.clients.jedis.exceptions JedisException JedisNoScriptException)
           (redis.clients.jedis.params ScanParams)
           (redis.clients.jedis.resps ScanResult)
           (org.slf4j Logger LoggerFactory)))

(set! *warn-on-reflection* true)

(def ^:private ^Logger log (LoggerFactory/getLogger "herald.feed.store"))

(def ^:private outage-interval-ms
  "How often a summary line is logged while Redis is down (see herald.feed.outage)."
  10000)

;; Keys, for a cache key k (any EDN value) under prefix P:  P v:<k>  the value (expires after :ttl-ms: the record
;; codec's bytes, or EDN text with :value-format :edn or from a version before 2026-11-26, both read back);
;; P g:<k>  the key's version, P seq  the version counter (never expires). Every version comes from the counter,
;; so it is unique: a loader remembers the version it saw before loading and stores its value only while the
;; version is unchanged; -invalidate! gives the key a new version and deletes the value, in one script.

(def ^:private fetch-script
  "KEYS value version counter; ARGV version-ttl-ms. {1 value} on a hit, else {0 version} (created when missing)."
  "local v = redis.call('GET', KEYS[1])
   if v then return {1, v} end
   local g = redis.call('GET', KEYS[2])
   if not g then
     g = tostring(redis.call('INCR', KEYS[3]))
     redis.call('SET', KEYS[2], g, 'PX', ARGV[1])
   end
   return {0, g}")

(def ^:private put-script
  "KEYS value version; ARGV version value ttl-ms. Stores the value only if the version is still the one read."
  "if redis.call('GET', KEYS[2]) == ARGV[1] then
     redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
     return 1
   end
   return 0")

(def ^:private invalidate-script
  "KEYS value version counter; ARGV version-ttl-ms. A new version for the key, and its value dropped."
  "redis.call('SET', KEYS[2], tostring(redis.call('INCR', KEYS[3])), 'PX', ARGV[1])
   return redis.call('DEL', KEYS[1])")

(defn- utf8 ^bytes [x] (.getBytes (str x) StandardCharsets/UTF_8))

(defn- sha1 ^String [^String s]
  (let [d (.digest (java.security.MessageDigest/getInstance "SHA-1") (utf8 s))]
    (apply str (map #(format "%02x" (bit-and (long %) 0xff)) d))))

(def ^:private shas
  "Each script's SHA1 as the bytes Jedis's binary API sends (computed once, not per call)."
  (into {} (map (juxt identity (comp utf8 sha1))) [fetch-script put-script invalidate-script]))

(defn- run-script
  "Runs script (by its SHA1, loading it when the server does not know it) with keys and args (strings or byte
  arrays) on j, in Jedis's binary API: the replies' bulk strings are byte arrays."
  [^Jedis j script keys args]
  (let [bs (fn [xs] (mapv #(if (bytes? %) % (utf8 %)) xs))
        ^List ks (bs keys) ^List as (bs args)]
    (try (.evalsha j ^bytes (shas script) ks as)
         (catch JedisNoScriptException _ (.eval j ^bytes (utf8 script) ks as)))))

(defn encode-value
  "The bytes stored for a cached value v: herald.flow's record codec (format :binary, a first byte 0xB1) or its EDN
  text (format :edn, what versions before 2026-11-26 wrote and read)."
  ^bytes [format v]
  (if (= :edn format)
    (utf8 (binding [*print-length* nil *print-level* nil *print-meta* false *print-namespace-maps* false] (pr-str v)))
    (RecordCodec/encode v)))

(defn decode-value
  "The cached value of stored bytes b, either format (RecordCodec/decode reads EDN text when the first byte is not
  the binary marker; EDN text never starts with 0xB1, a UTF-8 continuation byte)."
  [^bytes b]
  (RecordCodec/decode b))

(defmacro ^:private with-jedis
  "Runs body with `j` bound to a pooled connection (fields pool, open?)."
  [& body]
  `(do (when-not (.get ~(with-meta 'open? {:tag `AtomicBoolean}))
         (throw (ex-info "the cache is closed" {:type :herald.feed.store/closed})))
       (with-open [~(with-meta 'j {:tag `Jedis}) (.getResource ~(with-meta 'pool {:tag `JedisPool}))]
         ~@body)))

(defn- unavailable
  "Reports the failure of a call started at outage epoch `ep` to the outage reporter and returns the ex-info to
  throw (marked as reported)."
  [reporter ^long ep what ^Throwable e]
  (outage/failed! reporter e ep)
  (ex-info (str "redis: " what " failed: " (ex-message e))
           (outage/reported {:type :herald.feed.store/unavailable} reporter) e))

(defn- info-long
  "The numeric field of an INFO text, or 0."
  ^long [^String info field]
  (or (some->> (re-find (re-pattern (str "(?m)^" field ":(\\d+)")) info) second Long/parseLong) 0))

(deftype RedisCache [^JedisPool pool prefix ttl version-ttl value-format ^AtomicBoolean open? counters reporter]
  cache/Cache
  (-fetch [_ k load]
    (let [kk (pr-str k)
          vk (str prefix "v:" kk) gk (str prefix "g:" kk) sk (str prefix "seq")
          ep (outage/epoch reporter)
          [hit? x] (try (let [r (with-jedis (vec (run-script j fetch-script [vk gk sk] [version-ttl])))]
                          (outage/ok! reporter ep)
                          r)
                        (catch JedisException e
                          ;; the cache is down: serve from the store, uncached (one log line per state change)
                          (.incrementAndGet ^AtomicLong (:errors counters))
                          (outage/failed! reporter e ep)
                          [0 nil]))]
      (if (= 1 hit?)
        (do (.incrementAndGet ^AtomicLong (:hits counters)) (decode-value x))
        (do (.incrementAndGet ^AtomicLong (:misses counters))
            (let [v (load)]
              (when (and (some? v) x)
                (let [ep (outage/epoch reporter)]
                  (try (with-jedis (run-script j put-script [vk gk] [x (encode-value value-format v) ttl]))
                       (catch JedisException e
                         (.incrementAndGet ^AtomicLong (:errors counters))
                         (outage/failed! reporter e ep)))))
              v)))))
  (-invalidate! [_ k]
    (let [kk (pr-str k)
          ep (outage/epoch reporter)]
      (try (with-jedis (run-script j invalidate-script
                                   [(str prefix "v:" kk) (str prefix "g:" kk) (str prefix "seq")] [version-ttl]))
           (outage/ok! reporter ep)
           nil
           ;; never silently: a value that stayed could be served after the write
           (catch JedisException e (throw (unavailable reporter ep (str "invalidating " kk) e))))))
  (-cache-stats [_]
    (let [server (try (with-jedis (let [i (.info j "stats")] {:evictions (info-long i "evicted_keys")
                                                               :size (.dbSize j)}))
                      (catch Exception _ {:evictions 0 :size 0}))]
      (merge server {:hits (.get ^AtomicLong (:hits counters)) :misses (.get ^AtomicLong (:misses counters))
                     :errors (.get ^AtomicLong (:errors counters))})))

  lifecycle/Lifecycle
  (-close! [_] (when (.compareAndSet open? true false) (.close pool)) nil)
  (-ready? [_] (.get open?))
  (-stats [this] (cache/-cache-stats this)))

(defn- clear!
  "Deletes every cached value under prefix (SCAN + UNLINK, a batch at a time); returns how many."
  [^JedisPool pool prefix]
  (with-open [j (.getResource pool)]
    (let [params (doto (ScanParams.) (.match (str prefix "v:*")) (.count (int 1000)))]
      (loop [cursor ScanParams/SCAN_POINTER_START n 0]
        (let [^ScanResult r (.scan j ^String cursor params)
              ks (vec (.getResult r))
              n (+ n (if (seq ks) (.unlink j ^"[Ljava.lang.String;" (into-array String ks)) 0))]
          (if (= ScanParams/SCAN_POINTER_START (.getCursor r)) n (recur (.getCursor r) n)))))))

(def ^:private defaults
  {:uri "redis://127.0.0.1:6379/0" :prefix "herald:cache:" :ttl-ms 600000 :timeout-ms 2000 :pool-size 16
   :clear-on-open? true :value-format :binary})

(defn- validate [opts]
  (let [bad (fn [k what] (throw (ex-info (str "redis option " k " must be " what ", got " (pr-str (get opts k)))
                                         {:type :herald.feed.store/invalid :key k :value (get opts k)})))
        {:keys [uri prefix]} opts]
    (doseq [k (keys opts) :when (not (contains? defaults k))]
      (bad k (str "absent: not a redis option (they are " (pr-str (vec (sort (keys defaults)))) ")")))
    (when-not (and (string? uri) (re-matches #"rediss?://.+" uri)
                   (try (URI. uri) true (catch URISyntaxException _ false)))
      (bad :uri "a URI redis://[user:password@]host:port[/db]"))
    (when-not (and (string? prefix) (re-matches #"[A-Za-z0-9:_.\-]{1,200}" prefix))
      (bad :prefix "1..200 characters of A-Z a-z 0-9 : _ . -"))
    (when-not (boolean? (:clear-on-open? opts)) (bad :clear-on-open? "a boolean"))
    (when-not (#{:binary :edn} (:value-format opts)) (bad :value-format ":binary or :edn"))
    (doseq [[k lo hi] [[:ttl-ms 1000 (* 30 86400000)] [:timeout-ms 10 600000] [:pool-size 1 1000]]]
      (let [v (get opts k)]
        (when-not (and (int? v) (<= (long lo) (long v) (long hi))) (bad k (str "an integer in " lo ".." hi)))))
    opts))

(defn open
  "A Cache on Redis (also a Lifecycle: close it). Values are stored under prefix in herald.flow's binary record
  codec (or EDN text, :value-format), each expiring after :ttl-ms, and read back in either format;
  per-key versions (kept :ttl-ms + 1 h, far longer than a load) make a value loaded before an invalidation never
  stored after it. Bounded by the TTL and by the server's maxmemory: run it with a volatile-* maxmemory-policy
  (every cache key has a TTL, the version counter has none). Standalone Redis only (the scripts touch keys of
  several slots). A server that cannot be reached on open throws ex-info {:type :herald.feed.store/unavailable
  :key :uri}; when Redis fails later, -fetch loads from the store (uncached, counted in :errors) and -invalidate!
  throws ex-info :herald.feed.store/unavailable. An outage is logged by herald.feed.outage: one line when Redis
  goes down, a summary every 10 s while it stays down, one when it is back; an unknown option is an error.

  | key         | type   | default                    | meaning                                  |
  |-------------|--------|----------------------------|------------------------------------------|
  | :uri        | string | \"redis://127.0.0.1:6379/0\" | the server (redis:// or rediss://, user:password@ and /db allowed) |
  | :prefix     | string | \"herald:cache:\"            | prepended to every key (A-Z a-z 0-9 : _ . -) |
  | :ttl-ms     | int    | 600000                     | a cached value's life, 1000..30 days     |
  | :timeout-ms | int    | 2000                       | connect and socket timeout               |
  | :pool-size  | int    | 16                         | most pooled connections                  |
  | :clear-on-open? | boolean | true                  | drop the values cached under prefix when opening: a crash between a write and its invalidation leaves no stale value behind |
  | :value-format | keyword | :binary                 | how values are written: :binary (herald.flow.log.RecordCodec) or :edn (text, as before 2026-11-26); both are read. A rolling upgrade from a version that writes EDN runs :edn until no old instance is left (an old instance cannot read :binary values) |"
  [config]
  (let [{:keys [uri prefix ttl-ms timeout-ms pool-size clear-on-open? value-format]} (validate (merge defaults config))
        pc (doto (JedisPoolConfig.) (.setMaxTotal (int pool-size)) (.setMaxIdle (int pool-size))
             (.setMaxWait (java.time.Duration/ofMillis timeout-ms)))]
    (let [pool (JedisPool. pc (URI. uri) (int timeout-ms))]
      ;; a wrong :uri fails the start, not every request after it
      (try (with-open [j (.getResource pool)] (.ping j))
           (when clear-on-open?
             (let [n (clear! pool prefix)]
               (when (pos? (long n)) (.info log (str "redis cache: " n " values of the previous run dropped")))))
           (catch JedisException e
             (.close pool)
             (throw (ex-info (str "redis: cannot reach " (str/replace uri #"//[^@/]*@" "//") ": " (ex-message e))
                             {:type :herald.feed.store/unavailable :key :uri} e))))
      (RedisCache. pool prefix (str ttl-ms) (str (+ (long ttl-ms) 3600000)) value-format
                   (AtomicBoolean. true) {:hits (AtomicLong.) :misses (AtomicLong.) :errors (AtomicLong.)}
                   (outage/reporter (str "redis " (str/replace uri #"//[^@/]*@" "//")) {:interval-ms outage-interval-ms})))))
