(ns herald.feed.main
  "The feed's command line: reads the config (PORT, DATA_DIR, HERALD_PROFILE override it), starts the service, prints its URL, and shuts down gracefully on SIGINT/SIGTERM."
  (:require [clojure.string :as str]
            [clojure.tools.cli :as cli]
            [herald.feed :as feed]
            [herald.feed.auth :as auth]
            [herald.feed.config :as config])
  (:import (java.util.concurrent CountDownLatch)))

(set! *warn-on-reflection* true)

(def cli-options
  "Command line options; each overrides the config file and the environment."
  [["-c" "--config PATH" "EDN config file (default: the bundled herald/feed/config.edn)"]
   ["-O" "--config-overlay FILE" "EDN file deep-merged over the config, e.g. {:store {:search {:type :memory}}} (env HERALD_CONFIG_OVERLAY)"]
   ["-P" "--profile NAME" "config profile: embedded, memory or scale (env HERALD_PROFILE)" :parse-fn keyword]
   ["-p" "--port PORT" "HTTP port, 0 for an ephemeral one (env PORT)" :parse-fn #(Long/parseLong %)
    :validate [#(<= 0 % 65535) "must be 0..65535"]]
   ["-H" "--host HOST" "address to bind (env HOST)"]
   ["-d" "--data-dir DIR" "data directory of the embedded store (env DATA_DIR)"]
   ["-h" "--help" "print this help"]])

(defn- overrides [{:keys [port host data-dir]}]
  (cond-> {}
    port (assoc-in [:http :port] port)
    host (assoc-in [:http :host] host)
    data-dir (assoc-in [:store :data-dir] data-dir)))

(def token-options
  "Options of the `token` command (besides --config, --config-overlay and --profile, as for the service)."
  [[nil "--participant ID" "the participant the token speaks for (its subject)" :parse-fn #(Long/parseLong %)
    :validate [pos? "must be a positive participant id"]]
   [nil "--ttl SECONDS" "how long the token is valid" :default 3600 :parse-fn #(Long/parseLong %)
    :validate [pos? "must be a positive number of seconds"]]])

(defn- usage [summary]
  (str "Usage: java -jar herald-feed.jar [options]\n"
       "       java -jar herald-feed.jar token --participant ID [--ttl SECONDS] [-c/-O/-P as below]\n"
       "         prints an HS256 bearer token for participant ID, signed with the configured secret\n"
       "         (HERALD_JWT_SECRET), with the configured issuer and audience\n"
       "       java -jar herald-feed.jar redrive [--job NAME] [--all] [--dry-run] [-c/-O/-P as below]\n"
       "         re-publishes the Kafka log's dead letters to its posts topic (docs/feed-scale.md, Dead letters)\n\nOptions:\n" summary
       "\n\nEnvironment: PORT, HOST, DATA_DIR, HERALD_PROFILE, HERALD_CONFIG_OVERLAY, HERALD_MEMORY_ROLES (e.g. search,cache:"
       "\nthose :scale roles in memory) and the others in docs/feed.md."))

(defn- bind-address
  "The address the server binds, as operators should see it: 0.0.0.0 is every interface."
  [cfg port]
  (let [host (str (get-in cfg [:http :host] "0.0.0.0"))]
    (str host ":" port (when (#{"0.0.0.0" "::" ""} host) ", all interfaces")
         (when-let [sock (get-in cfg [:http :unix-socket])] (str ", and unix:" sock)))))

(defn- config-error?
  "True when `t` or one of its causes is a config error (a component's own option check, a store's included)."
  [t]
  (boolean (some #(#{:herald.feed/config :herald.feed.store/invalid} (:type (ex-data %)))
                 (take-while some? (iterate ex-cause t)))))

(defn token
  "The `token` command: prints an HS256 token for `--participant` valid `--ttl` seconds, signed with the config's
  `:auth :hs256-secret` (the token is the only thing printed to stdout; the secret is never printed). Exit 2
  on a bad option or when no secret is configured. `env` (default the process's) is the environment the config reads."
  ([args] (token args (into {} (System/getenv))))
  ([args env]
  (let [{:keys [options errors summary]} (cli/parse-opts args (concat token-options (filter #(#{"-c" "-O" "-P" "-h"} (first %)) cli-options)))
        fail (fn [& msg] (binding [*out* *err*] (println (apply str "herald.feed token: " msg))) 2)]
    (cond
      (:help options) (do (println (str "Usage: java -jar herald-feed.jar token --participant ID [options]\n\n" summary)) 0)
      errors (fail (str/join "; " errors))
      (nil? (:participant options)) (fail "--participant ID is required")
      :else
      (let [env (cond-> env
                  (:config-overlay options) (assoc "HERALD_CONFIG_OVERLAY" (:config-overlay options)))
            cfg (try (auth/check-config (:auth (config/load-config (:config options) (cond-> {:env env} (:profile options) (assoc :profile (:profile options))) nil)))
                     (catch clojure.lang.ExceptionInfo e e))]
        (cond (instance? Throwable cfg) (fail (ex-message cfg))
              (nil? (:hs256-secret cfg)) (fail "no HS256 secret is configured: set HERALD_JWT_SECRET (or :auth :hs256-secret)")
              :else (do (println ((requiring-resolve 'herald.feed.auth.jwt/mint) (:hs256-secret cfg) (:participant options) (:ttl options)
                                  :issuer (:issuer cfg) :audience (:audience cfg)))
                        0)))))))

;; issue 10: re-drive of the Kafka log's dead letters (herald.feed.events.redrive)

(def redrive-options
  "Options of the `redrive` command (besides --config, --config-overlay and --profile, as for the service)."
  [[nil "--job NAME" "only the dead letters of this job: feed-fan-out or feed-index (the other job's stay for a later re-drive)"
    :validate [#{"feed-fan-out" "feed-index"} "must be feed-fan-out or feed-index"]]
   [nil "--all" "from the dead-letter topic's beginning, not from where the last re-drive stopped"]
   [nil "--dry-run" "print what would be re-published; append and commit nothing"]])

(defn redrive
  "The `redrive` command: re-publishes the dead letters of the configured Kafka log (`:events`, `:type :kafka`) to
  its posts topic (herald.feed.events.redrive/redrive!), prints one line per post with `--dry-run`, and a summary
  line `redrive dead_letters=N posts=N republished=N late_changes=N unusable=N other_job=N`. Exit 2 on a bad option, a stray argument
  or a config without the Kafka log, 1 when Kafka fails. `env` (default the process's) is what the config reads."
  ([args] (redrive args (into {} (System/getenv))))
  ([args env]
   (let [{:keys [options arguments errors summary]} (cli/parse-opts args (concat redrive-options (filter #(#{"-c" "-O" "-P" "-h"} (first %)) cli-options)))
         fail (fn [code & msg] (binding [*out* *err*] (println (apply str "herald.feed redrive: " msg))) code)
         env (cond-> env (:config-overlay options) (assoc "HERALD_CONFIG_OVERLAY" (:config-overlay options)))]
     (cond
       (:help options) (do (println (str "Usage: java -jar herald-feed.jar redrive [options]\n\n" summary)) 0)
       errors (fail 2 (str/join "; " errors))
       ;; a stray word (`redrive dry-run`) must not run a real re-drive
       (seq arguments) (fail 2 "unexpected argument " (pr-str (first arguments)) ": options start with -- (see redrive --help)")
       :else
       (let [events (try (:events (config/load-config (:config options) (cond-> {:env env} (:profile options) (assoc :profile (:profile options))) nil))
                         (catch clojure.lang.ExceptionInfo e e))]
         (cond (instance? Throwable events) (fail 2 (ex-message events))
               (not= :kafka (:type events)) (fail 2 "the config has no Kafka log (:events {:type :kafka}, the scale profile): nothing is dead-lettered")
               :else
               (let [r (try ((requiring-resolve 'herald.feed.events.redrive/redrive!) (dissoc events :type)
                             {:job (:job options) :all? (:all options) :dry-run? (:dry-run options)})
                            (catch Exception e e))]
                 (if (instance? Throwable r)
                   (fail (if (config-error? r) 2 1) (ex-message r))
                   (do (when (:dry-run options)
                         (doseq [[id rec] (:records r)] (println "would re-publish post" id (first (keys rec)))))
                       (println (str "redrive dead_letters=" (:dead-letters r) " posts=" (:posts r) " republished=" (:republished r)
                                     " late_changes=" (:late-changes r) " unusable=" (:unusable r) " other_job=" (:other-job r)))
                       0)))))))))

(defn -main
  "Starts the feed service and blocks until the JVM is asked to stop; `token ...` mints a bearer token, `redrive ...`
  re-publishes the Kafka log's dead letters, instead."
  [& args]
  (let [{:keys [options errors summary]} (cli/parse-opts args cli-options)]
    (cond
      (= "token" (first args)) (let [code (token (rest args))] (flush) (when-not (zero? (long code)) (System/exit code)))
      (= "redrive" (first args)) (let [code (redrive (rest args))] (flush) (System/exit code))
      (:help options) (println (usage summary))
      errors (do (binding [*out* *err*] (println (str/join "\n" errors)) (println (usage summary)))
                 (System/exit 2))
      :else
      (let [env (cond-> (into {} (System/getenv))
                  (:config-overlay options) (assoc "HERALD_CONFIG_OVERLAY" (:config-overlay options)))
            sys (try (feed/start! {:config-path (:config options) :profile (:profile options) :env env
                                   :config (overrides options)})
                     (catch Throwable t
                       (binding [*out* *err*]
                         (println "herald.feed: failed to start:" (ex-message t))
                         (some->> (ex-cause t) ex-message (println "  cause:")))
                       ;; a bad config (like a bad option) is a usage error: 2; anything else 1
                       (System/exit (if (config-error? t) 2 1))))
            done (CountDownLatch. 1)
            cfg (:config sys)]
        (.addShutdownHook (Runtime/getRuntime)
                          (Thread. ^Runnable
                                   (fn []
                                     (binding [*out* *err*] (println "herald.feed: shutting down (drain, flush, close)"))
                                     (try (feed/stop! sys)
                                          (catch Throwable t
                                            (binding [*out* *err*] (println "herald.feed: error while stopping:" (ex-message t)))))
                                     (binding [*out* *err*] (println "herald.feed: stopped"))
                                     (.countDown done))
                                   "herald-feed-shutdown"))
        (println (str "herald.feed " (feed/version) " listening on " (feed/url sys)
                      " (bound to " (bind-address cfg (feed/port sys))
                      "; profile " (name (:profile cfg))
                      (when-let [d (get-in cfg [:store :data-dir])] (str ", data dir " d)) "; "
                      (auth/start-line (feed/authenticator sys)) ")"))
        (flush)
        (.await done)))))
