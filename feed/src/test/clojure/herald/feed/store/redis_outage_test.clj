(ns herald.feed.store.redis-outage-test
  "A real Redis stopped for 5 s under a running feed (:scale profile, the cache on Redis, the other roles in
  memory) and HTTP load: everything the process logs meanwhile (System.err, where slf4j-simple and the feed
  write, and *err*) is a handful of lines, with one down line and one back line, and no stack trace."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is]]
            [herald.feed :as feed]
            [herald.feed.servers.redis :as rd]
            [herald.feed.store.scale.roles :as roles]
            [herald.feed.test-util :as u])
  (:import (java.io ByteArrayOutputStream OutputStreamWriter PrintStream)
           (java.nio.charset StandardCharsets)))

(set! *warn-on-reflection* true)

(defn- load!
  "Runs `threads` closed-loop users against base until (stop?) is true; each reads participants, befriends and
  posts. Returns a future of {status count}."
  [base threads stop?]
  (let [statuses (atom {})
        user (fn [k]
               (let [req (fn [& args]
                           (let [s (try (:status (apply u/request base args)) (catch Exception _ :io-error))]
                             (swap! statuses update s (fnil inc 0))))]
                 (loop [i 0]
                   (when-not (stop?)
                     (let [a (inc (mod (+ i k) 20)) b (inc (mod (+ i k 7) 20))]
                       (req (str "/participant/" a))
                       (when (not= a b)
                         (req (str "/participant/" a "/friends") :method :post :json {:to (str "/participant/" b)}))
                       (req (str "/participant/" a "/outbound") :method :post :json {:subject "s" :story "outage"})
                       (recur (inc i)))))))]
    (future (run! deref (doall (for [k (range threads)] (future (user k))))) @statuses)))

(defmacro ^:private capturing-output
  "Runs body with System.err and the root *err* captured into the ByteArrayOutputStream `buf`; restores both."
  [buf & body]
  `(let [old-err# System/err
         old-root# *err*
         ps# (PrintStream. ~buf true "UTF-8")]
     (System/setErr ps#)
     (alter-var-root #'*err* (constantly (OutputStreamWriter. ps# StandardCharsets/UTF_8)))
     (try ~@body
          (finally (.flush ps#)
                   (System/setErr old-err#)
                   (alter-var-root #'*err* (constantly old-root#))))))

(deftest ^:integration a-redis-outage-under-load-is-a-few-log-lines
  (let [{:keys [uri stop start error]} (rd/start-own!)]
    (if error
      (clojure.test/do-report {:type :skip :message (str "Redis could not start: " error)})
      (let [sys (feed/start! {:profile :scale :env {}
                              :config {:http {:port 0 :host "127.0.0.1"}
                                       :events {:type :local}
                                       :store (merge roles/all-in-memory
                                                     {:type :scale :cache {:type :redis :uri uri :timeout-ms 500}})}})
            base (feed/url sys)
            buf (ByteArrayOutputStream.)
            done (atom false)]
        (try
          (dotimes [i 20] (u/request base "/participant" :method :post :json {:name (str "p" i)}))
          (let [statuses (capturing-output buf
                           (let [f (load! base 4 #(deref done))]
                             (Thread/sleep 1500)
                             (stop)
                             (Thread/sleep 5000)
                             (start)
                             (Thread/sleep 2500)
                             (reset! done true)
                             @f))
                text (String. (.toByteArray buf) StandardCharsets/UTF_8)
                lines (remove str/blank? (str/split-lines text))]
            (println "redis outage under load: statuses" statuses "->" (count lines) "log lines:")
            (run! #(println "  " %) (take 20 lines))
            (is (pos? (long (get statuses 503 0))) "befriending needs the cache's invalidation: 503 while Redis is down")
            (is (> (long (get statuses 200 0)) 1000) "the load ran")
            (is (<= 2 (count lines) 8) "a handful of lines, not one per request")
            (is (= 1 (count (filter #(re-find #"redis redis://127\.0\.0\.1:\d+/0 is down: " %) lines))) "one down line")
            (is (= 1 (count (filter #(re-find #"redis redis://127\.0\.0\.1:\d+/0 is back after \d+\.\d s down: \d+ failed calls" %) lines)))
                "one back line")
            (is (not-any? #(re-find #"^\s+at |^\S+(Exception|Error)(: |$)" %) lines) "no stack trace"))
          (finally (reset! done true) (feed/stop! sys) (try (stop) (catch Exception _ nil))))))))
