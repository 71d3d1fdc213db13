(ns herald.feed.new-user-test
  "What a new user hit (issue 11, \"Smaller things\"): an empty `keywords=` is a 400, a form body with invalid UTF-8
  a 400 naming the field (never stored as U+FFFD), `bin/herald-feed --help` works where the default `java` is 17, and
  the benchmark, the launcher and the docs use the JVM options (and GC) of `make run`."
  (:require [herald.feed.child-jvm :as child-jvm]
            [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.test-util :as u]
            [herald.json :as json])
  (:import (java.util.concurrent TimeUnit)))

(set! *warn-on-reflection* true)

(defn- root
  "The repository's root: the nearest directory up from the working directory with a Makefile and bin/."
  ^java.io.File []
  (loop [d (.getCanonicalFile (io/file (System/getProperty "user.dir")))]
    (cond (nil? d) (throw (ex-info "no repository root above the working directory" {}))
          (and (.isFile (io/file d "Makefile")) (.isDirectory (io/file d "bin"))) d
          :else (recur (.getParentFile d)))))

(defn- error? [r status field]
  (and (= status (:status r)) (= field (get-in r [:json "field"])) (string? (get-in r [:json "error"]))))

(deftest empty-keywords-and-bad-utf8-forms-are-400s
  (let [sys (u/start-feed! nil)
        base (feed/url sys)
        req (fn [& args] (apply u/request base args))
        raw (fn [path ^bytes body]
              (let [c (java.net.http.HttpClient/newHttpClient)
                    r (.send c (-> (java.net.http.HttpRequest/newBuilder (java.net.URI/create (str base path)))
                                   (.header "Content-Type" "application/x-www-form-urlencoded")
                                   (.POST (java.net.http.HttpRequest$BodyPublishers/ofByteArray body)) (.build))
                             (java.net.http.HttpResponse$BodyHandlers/ofString))]
                {:status (.statusCode r) :json (json/read (str (.body r)) {:keywords? false})}))]
    (try
      (testing "an empty or blank keywords= is a 400, not []"
        (is (error? (req "/outbound?keywords=") 400 "keywords"))
        (is (error? (req "/outbound?keywords=%20%20") 400 "keywords"))
        (is (= 200 (:status (req "/outbound?keywords=word")))))
      (let [a (get-in (req "/participant" :method :post :json {:name "Ann"}) [:json "id"])
            out (str "/participant/" a "/outbound")
            form (fn [s] (raw out (.getBytes ^String s "ISO-8859-1")))]
        (testing "percent-encoded bytes that are not UTF-8 are a 400 naming the field"
          (is (error? (raw "/participant" (.getBytes "name=%FF%FE" "ISO-8859-1")) 400 "name"))
          (is (error? (form "subject=ok&story=caf%C3%28") 400 "story"))
          (is (error? (form "subject=%E2%82&story=ok") 400 "subject"))
          (is (re-find #"'story' is not valid UTF-8" (get-in (form "subject=ok&story=%80") [:json "error"]))))
        (testing "raw bytes that are not UTF-8 too; a key that is not is the body's fault"
          (is (error? (form "subject=ok&story=caf\u00e9") 400 "story") "a Latin-1 é sent raw")
          (is (error? (form "subj%FFect=ok&story=ok") 400 "body")))
        (testing "valid text, U+FFFD itself included, is stored as sent"
          (is (= 200 (:status (form "subject=%EF%BF%BD&story=caf%C3%A9+ok"))))
          (is (= [{"subject" "\uFFFD" "story" "café ok"}]
                 (map #(select-keys % ["subject" "story"]) (:json (req out))))
              "nothing of the refused posts was stored"))
        (testing "a form body naming another charset is decoded with it"
          (let [r (u/request base out :method :post :body "subject=caf%E9&story=x"
                             :content-type "application/x-www-form-urlencoded; charset=ISO-8859-1")]
            (is (= 200 (:status r)))
            (is (= "café" (get-in r [:json "subject"])))))
        (testing "a charset named is held to: its bytes are checked too, an unknown or non-ASCII one is a 415"
          ;; found by the external fuzz campaign: charset=bogus (decoded as UTF-8 by herald.http) stored U+FFFD
          (let [named (fn [cs body] (u/request base out :method :post :body body
                                               :content-type (str "application/x-www-form-urlencoded; charset=" cs)))]
            (is (error? (named "bogus" "subject=a%FFb&story=x") 415 "Content-Type"))
            (is (re-find #"unsupported charset \"bogus\"" (get-in (named "bogus" "subject=ok&story=x") [:json "error"])))
            (is (error? (named "utf-16" "subject=ok&story=x") 415 "Content-Type") "UTF-16 does not write '=' as ASCII")
            (is (error? (named "us-ascii" "subject=a%FFb&story=x") 400 "subject"))
            (is (error? (named "unicode-1-1-utf-8" "subject=ok&story=a%FFb") 400 "story") "an alias of UTF-8")
            (is (= 200 (:status (named "us-ascii" "subject=plain&story=x"))))
            (is (= ["plain" "café" "\uFFFD"] (map #(get % "subject") (:json (req out))))
                "nothing of the refused posts was stored"))))
      (finally (feed/stop! sys)))))

(defn- make-jvm-opts
  "The Makefile's default JVM_OPTS (make run's)."
  []
  (str/trim (second (re-find #"(?m)^JVM_OPTS \?= (.+)$" (slurp (io/file (root) "Makefile"))))))

(deftest the-bench-the-launcher-and-the-docs-use-make-runs-jvm
  (let [opts (make-jvm-opts)
        gc (second (re-find #"-XX:\+Use(\w+GC)" opts))]
    (is (= "ParallelGC" gc) opts)
    (is (str/includes? (slurp (io/file (root) "bench/feed.sh")) (str "JVM_OPTS=${JVM_OPTS:-" opts "}"))
        "bench/feed.sh defaults to make run's JVM options")
    (is (str/includes? (slurp (io/file (root) "bin/herald-feed")) (str "${HERALD_FEED_JVM_OPTS:-" opts "}"))
        "bin/herald-feed runs with make run's JVM options")
    (is (re-find (re-pattern (str "`make run`[^.]*" gc)) (slurp (io/file (root) "docs/feed.md")))
        "docs/feed.md names make run's GC")))

(deftest the-launcher-finds-a-jdk-where-java-is-17
  ;; this machine's default `java` may be 17 (Debian 12); the launcher must not depend on it
  (let [^java.util.List cmd [(str (io/file (root) "bin/herald-feed")) "--help"]
        pb (doto (ProcessBuilder. cmd)
             (.redirectErrorStream true))
        env (.environment pb)
        _ (do (.remove env "JAVA_HOME")
              (.put env "HERALD_FEED_CLASSPATH" (child-jvm/classpath))
              (.put env "HERALD_FEED_JVM_OPTS" "-XX:TieredStopAtLevel=1"))
        p (.start pb)
        out (future (slurp (.getInputStream p)))]
    (if (.waitFor p 120 TimeUnit/SECONDS)
      (do (is (= 0 (.exitValue p)) @out)
          (is (str/includes? @out "Usage: java -jar herald-feed.jar [options]"))
          (is (str/includes? @out "token --participant ID")))
      (do (.destroyForcibly p) (is false "bin/herald-feed --help did not finish in 120 s")))))
