(ns herald.feed.dashboard
  "The live dashboard's data and pages: `snapshot` (per-minute throughput, latency and error rates per entity x
  operation, the fan-out and search lags, the instances covered), the page and its assets served from the
  classpath (herald/feed/dashboard/), and the Ring handlers of /dashboard, /dashboard/assets/:file,
  /dashboard/data and /dashboard/live (the WebSocket of herald.feed.dashboard.live)."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [herald.feed.errors :as err]
            [herald.feed.fanout :as fanout]
            [herald.feed.jobs :as jobs]
            [herald.feed.perf :as perf]
            [herald.http :as http]
            [herald.json :as json])
  (:import (java.lang.management ManagementFactory)
           (java.net InetAddress)
           (java.security MessageDigest)
           (java.util HexFormat)))

(set! *warn-on-reflection* true)

;; ---------------------------------------------------------------------------------------------------
;; options

(def defaults
  "The dashboard's default options (`:dashboard` in the config)."
  {:minutes 30 :interval-ms 1000 :max-viewers 32 :stall-ms 10000})

(def ^:private option-spec
  {:minutes [#(and (integer? %) (<= 1 (long %) 1440)) "an integer in 1..1440"]
   :interval-ms [#(and (integer? %) (<= 50 (long %) 60000)) "an integer in 50..60000 (milliseconds)"]
   :max-viewers [#(and (integer? %) (<= 0 (long %) 10000)) "an integer in 0..10000"]
   :stall-ms [#(and (integer? %) (<= 100 (long %) 600000)) "an integer in 100..600000 (milliseconds)"]})

(defn options
  "The dashboard options: `opts` (the config's `:dashboard` map, may be nil) over `defaults`. An unknown key
  or a bad value throws ex-info {:type :herald.feed/config :key [:dashboard k]} naming it."
  [opts]
  (merge defaults (jobs/check-options! :dashboard option-spec (or opts {}))))

;; ---------------------------------------------------------------------------------------------------
;; the snapshot

(defn- status-range [statuses ^long lo ^long hi]
  (when statuses
    (reduce-kv (fn [^long n s c] (if (<= lo (long s) hi) (+ n (long c)) n)) 0 statuses)))

(defn- round1 [x] (when x (/ (Math/round (* 10.0 (double x))) 10.0)))
(defn- round3 [x] (/ (Math/round (* 1000.0 (double x))) 1000.0))

(defn- point
  "The figures of one cell of `minute`; `seconds` is how much of the minute has passed (60 once it is over)."
  [minute cell closed? ^double seconds]
  (let [{:keys [count median_ms p95_ms p99_ms max_ms errors]} (perf/summarize cell)
        statuses (:statuses cell)]
    {:minute (perf/minute->iso minute) :count count :rate (round3 (/ (double count) (max 1.0 seconds)))
     :p50 median_ms :p95 p95_ms :p99 p99_ms :max max_ms :errors errors
     :e4xx (status-range statuses 400 499) :e5xx (status-range statuses 500 599)
     :closed (boolean closed?)}))

(defn- lag [stats k what]
  (if-let [n (get stats k)]
    {:posts n}
    {:posts nil :reason (str "the fan-out of this profile does not report its " what)}))

(def ^:private started-ms (delay (.getStartTime (ManagementFactory/getRuntimeMXBean))))

(def ^:private host-name
  (delay (try (.getHostName (InetAddress/getLocalHost)) (catch Exception _ "localhost"))))

(defn instance-info
  "This instance: {:host :pid :port :profile :events :version :started}."
  [{:keys [version config server]}]
  {:host @host-name
   :pid (.pid (java.lang.ProcessHandle/current))
   :port (when-let [srv (and server (deref server 0 nil))] (http/server-port srv))
   :profile (some-> (:profile config) name)
   :events (name (get-in config [:events :type] :local))
   :version version
   :started (str (java.time.Instant/ofEpochMilli @started-ms))})

(defn snapshot
  "The dashboard's figures at `now-ms` over the last `minutes` minutes (the current one partly), as JSON-ready
  data:
  - `:series`: per entity x operation (sorted), `:points` oldest minute first, each {:minute :count :rate
    (requests/s: over the part of the minute that has passed for the current one) :p50 :p95 :p99 :max (ms)
    :errors :e4xx :e5xx (nil when the recorder keeps no statuses) :closed};
  - `:totals`: the same counts summed over the series per minute;
  - `:lags`: {:fanout {:posts n} :search {:posts n}}: posts not yet through the fan-out and indexing jobs
    (in-process: queued; Kafka log: records behind the posts topic's end on this instance's partitions), or
    {:posts nil :reason why};
  - `:scope` \"instance\" or \"cluster\", `:instance` (this one), `:instances` (the instances whose requests
    are in the minutes shown, when the recorder knows; else just this one).
  `cache` (optional, an atom the caller keeps between calls) holds the points of closed minutes, which never
  change, so that an update computes the percentiles of the open minutes only."
  ([env now-ms minutes] (snapshot env now-ms minutes nil))
  ([{:keys [recorder fanout config] :as env} now-ms minutes cache]
  (let [now (long now-ms)
        cur (quot now 60000)
        lo (- cur (dec (long minutes)))
        elapsed (/ (double (- now (* cur 60000))) 1000.0)
        rows (perf/minute-cells recorder lo cur)
        closed (into {} (for [[m _] rows] [m (perf/closed-minute? recorder m)]))
        keys* (sort-by (fn [[e op]] [(name e) (name op)]) (distinct (mapcat (comp keys second) rows)))
        seconds #(if (= % cur) (max 1.0 elapsed) 60.0)
        ;; a closed minute's cells never change: their points come from `cache` (pruned to the window)
        cached (if cache @cache {})
        pts (into {} (for [[m cells] rows [k cell] cells]
                       [[m k] (or (get cached [m k]) (point m cell (closed m) (seconds m)))]))
        _ (when cache
            (reset! cache (into {} (filter (fn [[[m] p]] (and (:closed p) (>= (long m) lo)))) pts)))
        series (vec (for [[e op :as k] keys*]
                      {:entity (name e) :operation (name op)
                       :points (vec (for [[m cells] rows :when (get cells k)] (pts [m k])))}))
        totals (vec (for [[m cells] rows
                          :let [ps (map #(pts [m %]) (keys cells))
                                sum (fn [k] (when (every? #(some? (k %)) ps) (reduce + 0 (map k ps))))
                                n (reduce + 0 (map :count ps))]]
                      {:minute (perf/minute->iso m) :count n :rate (round3 (/ (double n) (double (seconds m))))
                       :errors (reduce + 0 (map :errors ps)) :e4xx (sum :e4xx) :e5xx (sum :e5xx)
                       :closed (boolean (closed m))}))
        fstats (try (fanout/stats fanout) (catch Exception _ nil))
        kafka? (= :kafka (get-in config [:events :type]))
        me (instance-info env)
        self-id (perf/source-id recorder)
        sources (perf/minute-sources recorder lo cur)
        contributors (when sources (vec (sort (into #{} cat (vals sources)))))]
    {:now (str (java.time.Instant/ofEpochMilli now))
     :now_ms now
     :current {:minute (perf/minute->iso cur) :elapsed_s (round1 elapsed)}
     :window {:from (perf/minute->iso lo) :to (perf/minute->iso cur) :minutes (long minutes)}
     :scope (if kafka? "cluster" "instance")
     :instance (assoc me :id self-id)
     :instances (if (seq contributors)
                  (mapv (fn [id] {:id id :self (= id self-id)}) contributors)
                  [{:id (or self-id (str (:host me) "/" (:pid me))) :self true}])
     :series series
     :totals totals
     :lags {:fanout (lag fstats :fan-out-lag "fan-out lag")
            :search (lag fstats :index-lag "indexing lag")
            :scope (if kafka? "instance: records behind the end of the posts topic's partitions this instance holds"
                       "instance: posts queued for this process's jobs")}})))

(defn snapshot-json
  "`snapshot` as JSON bytes (`cache` as there)."
  (^bytes [env now-ms minutes] (snapshot-json env now-ms minutes nil))
  (^bytes [env now-ms minutes cache] (json/write-bytes (snapshot env now-ms minutes cache))))

;; ---------------------------------------------------------------------------------------------------
;; the page and its assets

(def asset-types
  "The assets under herald/feed/dashboard/ and their content types."
  {"dashboard.js" "text/javascript; charset=utf-8"
   "dashboard.css" "text/css; charset=utf-8"
   "favicon.svg" "image/svg+xml"})

(defn- resource-bytes ^bytes [n]
  (let [r (or (io/resource (str "herald/feed/dashboard/" n))
              (throw (ex-info (str "dashboard resource missing: " n) {:type :herald.feed/config :key n})))]
    (with-open [in (io/input-stream r)] (.readAllBytes in))))

(defn- digest ^String [^bytes b]
  (subs (.formatHex (HexFormat/of) (.digest (MessageDigest/getInstance "SHA-256") b)) 0 16))

(defn- load-assets
  "{name {:bytes :etag :type :hash}} of every asset, and the page with the assets' hashes in their URLs."
  []
  (let [assets (into {} (for [[n t] asset-types :let [b (resource-bytes n) h (digest b)]]
                          [n {:bytes b :type t :hash h :etag (str "\"" h "\"")}]))
        page (reduce (fn [^String s [n {:keys [hash]}]] (str/replace s (str "{{" n "}}") (str "/dashboard/assets/" n "?v=" hash)))
                     (String. (resource-bytes "index.html") "UTF-8") assets)
        pb (.getBytes ^String page "UTF-8")
        ph (digest pb)]
    {:assets assets :page {:bytes pb :type "text/html; charset=utf-8" :etag (str "\"" ph "\"")}}))

(def ^:private loaded (delay (load-assets)))

(defn- not-modified? [req etag]
  (when-let [inm (get (:headers req) "if-none-match")]
    (or (= "*" (str/trim inm)) (some #(= etag (str/trim %)) (str/split inm #",")))))

(defn- serve [req {:keys [bytes type etag]} cache-control]
  (if (not-modified? req etag)
    {:status 304 :headers {"etag" etag "cache-control" cache-control}}
    {:status 200 :headers {"content-type" type "etag" etag "cache-control" cache-control
                           "x-content-type-options" "nosniff"}
     :body bytes}))

(defn page
  "GET /dashboard: the page (revalidated on every load: `no-cache` with an ETag; its asset URLs carry their
  content hash)."
  [_ctx req]
  (let [r (serve req (:page @loaded) "no-cache")]
    (cond-> r (= 200 (:status r))
      (update :headers assoc "content-security-policy"
              "default-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'"))))

(defn- query-param [req k]
  (let [v (get (:query-params req) k)] (if (sequential? v) (first v) v)))

(defn asset
  "GET /dashboard/assets/:file: a script, style sheet or icon of the page. With `?v=` its current content hash
  (the page's URLs) it is cached for a year (`immutable`); otherwise revalidated (`no-cache`, ETag). An unknown
  file is a 404 JSON error."
  [_ctx req]
  (let [n (get-in req [:path-params :file])
        a (get (:assets @loaded) n)]
    (if-not a
      (err/response 404 (str "no dashboard asset " (err/json-text n) ": one of "
                             (str/join ", " (sort (keys asset-types))))
                    :field "file" :value n)
      (serve req a (if (= (:hash a) (query-param req "v"))
                     "public, max-age=31536000, immutable"
                     "no-cache")))))

(defn data
  "GET /dashboard/data: the current `snapshot` as JSON (`no-store`): for clients without WebSockets, and the
  page's first paint. `ctx` carries the checked `:dashboard-options`."
  [ctx _req]
  {:status 200 :headers {"content-type" "application/json; charset=utf-8" "cache-control" "no-store"}
   :body (snapshot-json ctx (System/currentTimeMillis) (:minutes (:dashboard-options ctx)))})
