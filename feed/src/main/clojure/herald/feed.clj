(ns herald.feed
  "The news feed service: start and stop it as a system (store, fan-out and indexing jobs, per-minute performance job, HTTP server) from the EDN config."
  (:require [herald.feed.quiet]            ; first: before Lucene loads
            [clojure.java.io :as io]
            [clojure.string :as str]
            [herald.feed.auth :as auth]
            [herald.feed.config :as config]
            [herald.feed.errors :as err]
            [herald.feed.fanout :as fanout]
            [herald.feed.perf :as perf]
            [herald.feed.routes :as routes]
            [herald.feed.service :as svc]
            [herald.feed.store :as store]
            [herald.feed.store.search :as search]
            [herald.feed.system :as system]
            [herald.http :as http]))

(set! *warn-on-reflection* true)

(defn version
  "The feed's version from the jar's Maven metadata, or \"dev\" when run from sources."
  []
  (or (some-> (io/resource "META-INF/maven/dev.herald/herald-feed/pom.properties")
              slurp
              (->> (re-find #"(?m)^version=(.+)$"))
              second)
      "dev"))

(defn- log [& xs]
  (binding [*out* *err*] (apply println "herald.feed:" xs)))

(def ^:private fanout-keys
  #{:threads :index-threads :queue-size :batch-size :batch-timeout-ms :retries :drain-timeout-ms})

(def ^:private perf-keys
  #{:runtime :retention-minutes :publish-ms :allowed-lateness-ms :queue-size :batch-size :sync-wait-ms :send-ms :dir})

(defn- check-keys!
  "Throws ex-info {:type :herald.feed/config :key [section k]} for a key of `cfg` not in `known`, whichever
  runtime is chosen (a typo must not pass silently because the fallback ignores the key)."
  [section cfg known]
  (doseq [k (keys cfg) :when (not (known k))]
    (throw (ex-info (str "unknown " section " option " k ", expected one of " (str/join " " (sort known)))
                    {:type :herald.feed/config :key [section k] :value (get cfg k)}))))

(defn- fanout-component
  "Starts the fan-out over `store` on the configured event log (herald.feed.events/start-fanout): the jobs
  in-process over the store's records, or on Kafka Streams over the Kafka log."
  [store config]
  (let [cfg (:fanout config)]
    (check-keys! :fanout cfg fanout-keys)
    ((requiring-resolve 'herald.feed.events/start-fanout) store (:events config {:type :local})
     (dissoc cfg :drain-timeout-ms))))

(defn- store-config
  "The store's config: with the Kafka log, a :scale store keeps no search mark (the index job's committed offsets
  are the search progress)."
  [config]
  (cond-> (:store config)
    (and (= :kafka (get-in config [:events :type])) (= :scale (get-in config [:store :type])))
    (assoc :search-progress :log)))

(defn perf-dir
  "Where the per-minute job stores closed minutes: `:perf :dir`, else `perf/` in the store's data
  directory, else nil (memory only)."
  [config]
  (or (get-in config [:perf :dir])
      (some-> (get-in config [:store :data-dir]) (io/file "perf") str)))

(defn- recorder-component
  "Starts the per-minute performance recorder (the per-minute herald.flow job: in-process, or on Kafka Streams
  when `:events` is Kafka) from `config`."
  [config]
  (let [cfg (:perf config)]
    (check-keys! :perf cfg perf-keys)
    (config/check-one-of! [:perf :runtime] (:runtime cfg :flow) [:flow])
    ((requiring-resolve 'herald.feed.jobs.perf/flow-recorder)
     (assoc (dissoc cfg :runtime) :dir (perf-dir config) :events (:events config {:type :local})
            ;; the instance's local directory: the embedded store's, or DATA_DIR under :events in :scale
            :data-dir (or (get-in config [:store :data-dir]) (get-in config [:events :data-dir]))))))

(defn components
  "The system definition for a resolved `config` (see herald.feed.config/load-config): key ->
  {:deps :start :stop}. Started in dependency order, stopped in reverse: the HTTP server first
  (stop accepting, drain in-flight requests), then the fan-out (finish queued jobs) and the performance
  recorder (close and store the open minutes), then the store (flush and close)."
  [config]
  (let [draining? (atom false)
        drain-ms (long (get-in config [:fanout :drain-timeout-ms] 10000))]
    {;; no deps: a bad :auth config fails before the store opens
     ::auth {:start (fn [_] {:authenticator (auth/authenticator (:auth config))})}
     ::store {:start (fn [_] (store/open-store (store-config config)))
              :stop store/close-store!}
     ::recorder {:deps [::store]
                 :start (fn [_] (recorder-component config))
                 :stop (fn [r] (when-not (perf/close-recorder! r drain-ms)
                                 (log "the per-minute job did not finish in" drain-ms "ms")))}
     ::fanout {:deps [::store]
               :start (fn [{s ::store}] (fanout-component s config))
               :stop (fn [f] (when-not (fanout/close! f drain-ms)
                               (log "fan-out did not drain in" drain-ms "ms; the rest resumes on the next start")))}
     ::service {:deps [::store ::fanout]
                :start (fn [{s ::store f ::fanout}]
                         (let [ctx (svc/context s f (:feed config))
                               ;; on the Kafka log nothing is pending in the store: the log is the record
                               n (if (= :kafka (get-in config [:events :type])) 0 (svc/resume-pending! ctx))]
                           (when (pos? n) (log "resuming" n "pending fan-outs"))
                           ctx))}
     ::server {:deps [::service ::store ::fanout ::recorder ::auth]
               :start (fn [{ctx ::service s ::store f ::fanout r ::recorder a ::auth}]
                        (let [server-ref (promise) ; /metrics reads the server's own figures
                              env {:ctx ctx :store s :fanout f :recorder r :version (version) :draining? draining?
                                   :server server-ref :auth (:authenticator a)
                                   :config config}
                              server (http/start-server (routes/ring-handler env)
                                                        ;; the server's own answers are JSON errors like the feed's
                                                        (merge {:error-response err/server-answer} (:http config)))]
                          (deliver server-ref server)
                          {:server server :draining? draining?}))
               :stop (fn [{:keys [server draining?]}]
                       (reset! draining? true)
                       @(http/stop-server server))}}))

(defn start!
  "Starts the feed service and returns the running system (stop it with `stop!`).

  | key            | type    | default               | meaning |
  |----------------|---------|-----------------------|---------|
  | `:config-path` | string  | bundled config.edn    | an EDN config file to read instead |
  | `:profile`     | keyword | `HERALD_PROFILE` or `:embedded` | `:embedded` (RocksDB + Lucene in `DATA_DIR`), `:memory` or `:scale` (real servers, docs/feed-scale.md) |
  | `:env`         | map     | `(System/getenv)`     | environment for `#env` (tests pass their own) |
  | `:config`      | map     | {}                    | deep-merged over the file, e.g. {:http {:port 0} :store {:data-dir \"/tmp/x\"}} |

  Every config key is documented in docs/feed.md."
  ([] (start! {}))
  ([{:keys [config-path profile env] overrides :config}]
   (let [cfg (config/load-config config-path (cond-> {} profile (assoc :profile profile) env (assoc :env env))
                                 overrides)]
     (assoc (system/start (components cfg)) :config cfg))))

(defn stop!
  "Stops a system from `start!`: drains the server, finishes queued fan-out, closes the store.
  Idempotent."
  [sys]
  (system/stop sys))

(defn port
  "The HTTP port the running system listens on."
  [sys]
  (http/server-port (:server (system/value sys ::server))))

(defn url
  "The base URL of the running system, e.g. http://127.0.0.1:8080."
  [sys]
  (let [host (get-in sys [:config :http :host] "127.0.0.1")]
    (str "http://" (if (#{"0.0.0.0" "::" ""} host) "127.0.0.1" host) ":" (port sys))))

(defn authenticator
  "The running system's herald.feed.auth/Authenticator, nil when auth is off."
  [sys]
  (:authenticator (system/value sys ::auth)))

(defn service
  "The service context of a running system (see herald.feed.service)."
  [sys]
  (system/value sys ::service))

(defn await-perf
  "Blocks until every request served so far shows in /perf and /metrics; true if within `timeout-ms`.
  For tests and tools (the endpoints themselves wait a bounded time, see `:perf :sync-wait-ms`)."
  [sys timeout-ms]
  (perf/await-recorded (system/value sys ::recorder) timeout-ms))

(defn await-fanout
  "Blocks until the background work of every post accepted so far has run (copied into the friends'
  inbound feeds, indexed) and makes those posts searchable at once (see :search-max-lag-ms); true if
  done within `timeout-ms`. It is herald.flow/await-caught-up on the fan-out and indexing jobs: on the Kafka
  log, every instance's share (the consumer groups' committed offsets). For tests and tools: requests never
  need it."
  [sys timeout-ms]
  (let [idle? (fanout/await-idle (system/value sys ::fanout) timeout-ms)]
    (when idle? (search/refresh-search! (system/value sys ::store)))
    idle?))
