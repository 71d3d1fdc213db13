(ns herald.load.feed-test
  "The news feed workload against a small fake feed service on loopback: request mix, bodies, roles, log."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.load :as load]
            [herald.load.impl.aggregate :as agg]
            [herald.json :as json]
            [herald.load.main :as main]
            [herald.load.test-server :as ts])
  (:import (com.sun.net.httpserver HttpExchange)))

(set! *warn-on-reflection* true)

(defn- fake-feed
  "A handler answering the feed contract's shapes; counts [method route] in `seen`, bodies in `bodies`."
  [seen bodies]
  (let [ids (atom 0)]
    (fn [^HttpExchange ex]
      (let [method (.getRequestMethod ex)
            path (.getPath (.getRequestURI ex))
            ctype (.getFirst (.getRequestHeaders ex) "Content-Type")
            route (cond (= path "/participant") :participant
                        (re-matches #"/participant/\d+/friends" path) :friends
                        (re-matches #"/participant/\d+/outbound" path) :outbound
                        (re-matches #"/participant/\d+/inbound" path) :inbound
                        (= path "/outbound") :search
                        :else :other)]
        (swap! seen update [method route] (fnil inc 0))
        (swap! bodies update ctype (fnil inc 0))
        (if (and (= method "POST") (= route :participant))
          (let [id (swap! ids inc)]
            (ts/respond! ex 200 (json/write-str {:id id :name "n" :link (str "/participant/" id)})))
          (ts/respond! ex (if (= route :other) 404 200) (if (= method "GET") "[]" "{}")))))))

(deftest ^:integration broadcaster-mix-matches-the-reference-ratios
  ;; per batch: 10 participants, 3 inviters x 2-3 invitees minus self-pairs (~6.75 friendships),
  ;; 10 posts per invitee (~25): participant : friends : outbound ~ 1 : 0.68 : 2.5
  ;; The run stops once 300 participants were created (30 batches), not after a fixed time: a cold JVM on a loaded
  ;; machine made too few batches in 4 s. The 120 s duration only bounds a hang. The 4 users' unfinished batches
  ;; can hold up to 40 of the participants with none of their posts yet, and the stop check sees the count a little
  ;; late: outbound/participant can be as low as ~2.5 x 260/300 = 2.17 and lower still by the lag (2.1 seen once
  ;; at load 18), hence the bound of 2.0 (a mix without its 10 posts per invitee gives 1 or less).
  (let [seen (atom {}) bodies (atom {})
        log (java.io.File/createTempFile "feed" ".log")
        n (fn [route] (get @seen ["POST" route] 0))]
    (ts/with-server [s (fake-feed seen bodies) 4]
      (let [r (load/feed {:port (:port s) :users 4 :search-share 0.0 :duration 120 :interval 0.1 :progress :quiet
                          :stop-when #(>= (n :participant) 300) :story-words 20 :log-file (str log)})
            p (n :participant)]
        (is (>= p 300) (str "participants created: " p))
        (is (< 0.55 (/ (n :friends) (double p)) 0.8) (str "friends/participant " (/ (n :friends) (double p))))
        (is (< 2.0 (/ (n :outbound) (double p)) 2.9) (str "outbound/participant " (/ (n :outbound) (double p))))
        (is (= {:broadcaster 4} (:roles r)))
        (is (= #{"application/json"} (set (keys @bodies))))
        (is (zero? (reduce + (vals (:errors r)))) (pr-str (:errors r)))
        (is (re-find #"outbound post\s+\d+" (load/summary-text r)))
        (testing "every request recorded as entity x operation"
          (is (= #{"participant post" "friends post" "outbound post"} (set (keys (:operations r)))))
          (is (= (+ p (n :friends) (n :outbound)) (:requests r)))
          (is (= (:requests r) (reduce + (map :count (:per-minute r))))))
        (testing "the HTML report has the per entity x operation table of stdout and summary.json"
          (let [dir (.toFile (java.nio.file.Files/createTempDirectory "herald-feed" (make-array java.nio.file.attribute.FileAttribute 0)))
                _ (load/write-result! dir r)
                html (slurp (io/file dir "report.html"))
                sj (json/read (.getBytes (slurp (io/file dir "summary.json")) "UTF-8") {:keywords? true})]
            (is (str/includes? html "<h2>Operations: "))
            (is (str/includes? html "<th>operation</th><th>count</th><th>p50</th><th>p95</th><th>p99</th><th>max</th><th>errors</th>"))
            (doseq [[k {:keys [latency]}] (:operations r)]
              (is (str/includes? html (str "<tr><td>" k "</td><td>" (:count latency) "</td><td>" (:p50 latency) "</td><td>"
                                           (:p95 latency) "</td><td>" (:p99 latency) "</td><td>" (:max latency) "</td><td>0</td></tr>"))
                  k)
              (is (= (:count latency) (get-in sj [:operations (keyword k) :latency :count])) k))))
        (testing "the reference performance log holds one line per request"
          (let [lines (str/split-lines (slurp log))]
            (is (= (:requests r) (count lines)))
            (is (every? #(re-matches #"\d{4}\|\d{1,2}\|\d{1,2}\|\d{1,2}\|\d{1,2}\|(participant|friends|outbound)\|post\|\d+" %) lines))
            (is (= (set (map (juxt :entity :operation :count) (:per-minute r)))
                   (set (map (juxt :entity :operation :count) (load/aggregate-log log)))))))))
    (io/delete-file log true)))

(deftest ^:integration searchers-readers-and-form-bodies
  (let [seen (atom {}) bodies (atom {})]
    (ts/with-server [s (fake-feed seen bodies) 4]
      (let [r (load/feed {:port (:port s) :users 12 :search-share 0.34 :reader-share 0.33 :duration 2
                          :body-format :form :new-connection? true :rate-cap 300 :progress :quiet :seed 7})]
        (is (= 12 (reduce + (vals (:roles r)))))
        (is (every? pos? (map #(get (:roles r) % 0) [:searcher :reader :broadcaster])) (pr-str (:roles r)))
        (is (pos? (get @seen ["GET" :search] 0)))
        (is (pos? (get @seen ["GET" :inbound] 0)))
        (is (= #{"application/x-www-form-urlencoded"} (disj (set (keys @bodies)) nil)))
        (testing "the rate cap holds"
          (is (<= (get-in r [:rate :achieved]) 320) (pr-str (:rate r))))))))

(deftest bad-feed-options-name-the-key
  (is (thrown-with-msg? clojure.lang.ExceptionInfo #":search-share"
                        (load/feed {:search-share 1.5})))
  (is (= :max-friends (:key (ex-data (try (load/feed {:min-friends 3 :max-friends 2}) (catch Exception e e))))))
  (testing "the shares of edits, deletes and single-post reads: each 0..1, together at most 1"
    (doseq [[opts k] [[{:edit-share 1.5} :edit-share] [{:delete-share -0.1} :delete-share]
                      [{:read-post-share "x"} :read-post-share] [{:edit-share 0.6 :delete-share 0.5} :delete-share]
                      [{:edit-share 0.4 :delete-share 0.3 :read-post-share 0.4} :read-post-share]]]
      (is (= k (:key (ex-data (try (load/feed (assoc opts :port 1 :duration 1)) (catch Exception e e))))) (pr-str opts))))
  (testing "the command line: a usage error (exit 1) naming the option"
    (let [err (java.io.StringWriter.)
          code (binding [*err* err] (main/run-cli ["feed" "--port" "1" "-d" "1s" "-q" "--edit-share" "0.7" "--delete-share" "0.5"]))]
      (is (= 1 code))
      (is (re-find #":delete-share" (str err)) (str err)))))

(deftest ^:integration a-dead-server-backs-off-and-exits-2
  ;; it used to loop without backoff (86,016 connect errors in 5 s at 160% CPU) and exit 0
  (let [port (with-open [s (java.net.ServerSocket. 0)] (.getLocalPort s))
        code (atom nil)
        out (with-out-str (binding [*err* (java.io.StringWriter.)]
                            (reset! code (main/run-cli ["feed" "--port" (str port) "-u" "3" "-d" "1s" "-q"]))))
        failed (some->> (re-find #"Errors: connect (\d+)" out) second parse-long)]
    (is (= 2 @code) out)
    (is (and failed (<= 3 failed 200)) (str "3 users backing off 20 ms for 1 s: " failed " connect errors"))))

(deftest ^:integration feed-warm-up-is-sent-but-not-recorded
  (let [seen (atom {}) bodies (atom {})
        log (java.io.File/createTempFile "feed" ".log")]
    (ts/with-server [s (fake-feed seen bodies) 4]
      (let [r (load/feed {:port (:port s) :users 2 :search-share 0.0 :warmup 3 :duration 1 :progress :quiet
                          :story-words 10 :log-file (str log)})
            sent (reduce + (vals @seen))]
        (is (pos? (:requests r)))
        (is (< (:requests r) sent) (str (:requests r) " recorded of " sent " sent"))
        ;; with the warm-up it would be >= 4 s; the upper bound leaves a loaded machine 2 s to end the run
        (is (< 0.8 (:duration-s r) 3.0) "the measured time excludes the warm-up")
        (is (= (:requests r) (reduce + (map :count (:per-minute r))) (count (str/split-lines (slurp log)))))
        (is (= (:requests r) (reduce + (vals (:status r)))))))
    (io/delete-file log true)))

