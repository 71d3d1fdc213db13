(ns herald.feed.perf-test
  "Tests of the per-minute performance figures (over the in-process per-minute job) and the reference log format."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.jobs.perf :as jperf]
            [herald.feed.perf :as perf]
            [herald.feed.system :as system]
            [herald.feed.test-util :as u]))

(set! *warn-on-reflection* true)

(def ^:private t0 (perf/parse-time "2026-11-22T13:05:00Z" "from"))

(defmacro ^:private with-recorder
  "Binds `sym` to a flow-recorder of `opts` (in-process) for body, closing it after."
  [[sym opts] & body]
  `(let [~sym (jperf/flow-recorder (merge {:publish-ms 20} ~opts))]
     (try ~@body (finally (perf/close-recorder! ~sym 10000)))))

(deftest figures-per-minute-and-entity-operation
  (let [now (atom (+ t0 (* 5 60000)))]
    (with-recorder [r {:clock #(deref now) :allowed-lateness-ms 0}]
      (doseq [ms (range 1 101)]
        (perf/record! r :outbound :post (* ms 1000000) 200 (+ t0 1000)))
      (perf/record! r :outbound :post 7000000 400 (+ t0 2000))
      (perf/record! r :participant :get 2000000 200 (+ t0 60000))
      (let [[a b c :as figs] (perf/figures r nil nil)]
        (is (= 2 (count figs)))
        (is (= {:minute "2026-11-22T13:05:00Z" :entity "outbound" :operation "post" :count 101 :errors 1 :closed true}
               (select-keys a [:minute :entity :operation :count :errors :closed])))
        (is (< 49.9 (:median_ms a) 51.1))
        (is (< 94.9 (:p95_ms a) 96.1))
        (is (< 98.9 (:p99_ms a) 100.1))
        (is (< 99.9 (:max_ms a) 100.1))
        (is (= ["2026-11-22T13:06:00Z" "participant" "get" 1] ((juxt :minute :entity :operation :count) b)))
        (is (nil? c)))
      (testing "the range selects whole minutes"
        (is (= ["outbound"] (map :entity (perf/figures r t0 (+ t0 59999)))))
        (is (= ["participant"] (map :entity (perf/figures r (+ t0 60000) nil)))))
      (testing "the current minute is open"
        (reset! now (+ t0 60001))
        (is (= [true false] (map :closed (perf/figures r nil nil))))))))

(deftest log-lines-in-the-reference-format
  (with-recorder [r {:clock (constantly t0)}]
    (perf/record! r :outbound :post 17000000 200 t0)
    (perf/record! r :outbound :post 17200000 200 t0)
    (perf/record! r :friends :post 4000000 200 t0)
    ;; month zero-based, as the reference's java.util.Calendar wrote it
    (is (= ["2026|10|22|13|5|friends|post|4" "2026|10|22|13|5|outbound|post|17" "2026|10|22|13|5|outbound|post|17"]
           (vec (perf/log-lines r nil nil))))))

(deftest old-minutes-are-dropped
  (with-recorder [r {:retention-minutes 2}]
    (doseq [m (range 5)] (perf/record! r :inbound :get 1000 200 (+ t0 (* m 60000))))
    (is (= ["2026-11-22T13:07:00Z" "2026-11-22T13:08:00Z" "2026-11-22T13:09:00Z"]
           (map :minute (perf/figures r nil nil))))
    (is (= 5 (:count (get (perf/totals r) [:inbound :get]))) "totals since start keep everything")))

(deftest time-bounds-parse-or-name-the-field
  (is (= t0 (perf/parse-time (str t0) "from")))
  (is (= t0 (perf/parse-time "2026-11-22T13:05" "from")))
  (is (= (- t0 (* 1000 (+ (* 13 3600) (* 5 60)))) (perf/parse-time "2026-11-22" "from")))
  (is (nil? (perf/parse-time "" "to")))
  (is (= (+ (perf/parse-time "2026-11-22" "from") (* 86400 1000) -1) (perf/parse-time "2026-11-22" "to")))
  (let [e (try (perf/parse-time "yesterday" "to") (catch Exception e e))]
    (is (= {:type :herald.feed/bad-request :field "to" :value "yesterday"} (ex-data e))))
  (is (thrown? clojure.lang.ExceptionInfo (jperf/flow-recorder {:retention-minutes 0}))))

(deftest concurrent-recording-loses-nothing
  (with-recorder [r {}]
    (let [threads (for [_ (range 4)]
                    (future (dotimes [i 5000] (perf/record! r :outbound :post (* 1000 (inc (mod i 50))) 200))))]
      (run! deref (doall threads))
      ;; a read waits at most :sync-wait-ms (2 s) for the job: on a loaded machine wait for it first
      (is (perf/await-recorded r 60000) "the per-minute job took every record")
      (is (= 20000 (:count (get (perf/totals r) [:outbound :post]))))
      (is (= 20000 (reduce + (map :count (perf/figures r nil nil)))))
      (is (= 20000 (get (perf/status-counts r) [:outbound :post 200])))
      (is (every? #(str/ends-with? % "|outbound|post|0") (take 10 (perf/log-lines r nil nil)))))))

(defn- nearest-rank [sorted p]
  (nth sorted (dec (long (Math/ceil (* (/ p 100.0) (count sorted)))))))

(deftest log-lines-reproduce-the-figures-over-http
  ;; > 32 distinct values: HdrHistogram's iterator reuses one mutable value object (F7)
  (let [sys (u/start-feed! nil)
        r (system/value sys :herald.feed/recorder)
        base (feed/url sys)
        minute (* 60000 (- (quot (System/currentTimeMillis) 60000) 3))
        iso (perf/minute->iso (quot minute 60000))]
    (try
      (doseq [ms (range 1 121) _ (range (inc (mod ms 3)))]
        (perf/record! r :outbound :post (* ms 1000000) 200 (+ minute 100)))
      (doseq [ms (range 40 90)]
        (perf/record! r :friends :get (* ms 100000) 200 (+ minute 200)))
      (let [q (str "?from=" iso "&to=" iso)
            figs (get-in (u/request base (str "/perf" q)) [:json "minutes"])
            lines (str/split-lines (:body (u/request base (str "/perf/log" q))))
            by-op (group-by #(subvec (str/split % #"\|") 5 7) lines)]
        (is (= 2 (count figs)))
        (doseq [f figs
                :let [vs (->> (by-op [(get f "entity") (get f "operation")])
                              (map #(Long/parseLong (peek (str/split % #"\|"))))
                              sort vec)]]
          (testing (str (get f "entity") " " (get f "operation"))
            (is (= (get f "count") (count vs)))
            (is (= (Math/round (double (get f "median_ms"))) (nearest-rank vs 50)))
            (is (= (Math/round (double (get f "p95_ms"))) (nearest-rank vs 95)))
            (is (= (Math/round (double (get f "max_ms"))) (peek vs)))))
        (is (= 240 (count (by-op ["outbound" "post"])))))
      (finally (feed/stop! sys)))))

(deftest perf-bounds-over-http
  (let [sys (u/start-feed! nil)
        r (system/value sys :herald.feed/recorder)
        base (feed/url sys)]
    (try
      (perf/record! r :inbound :get 1000000 200 (perf/parse-time "2026-11-21T15:07:00Z" "from"))
      (testing "from after to is a 400 naming from, on /perf and /perf/log (F6)"
        (doseq [path ["/perf?from=2026-11-22&to=2026-11-21" "/perf/log?from=2026-11-22T15:00&to=2026-11-22T14:00"]
                :let [{:keys [status json]} (u/request base path)]]
          (is (= 400 status) path)
          (is (= "from" (get json "field")) path)
          (is (re-find #"'from' .* is after 'to'" (str (get json "error"))) path)))
      (testing "a date `to` means the whole day; bounds are echoed as ISO-8601 (F14)"
        (let [{:keys [status json]} (u/request base "/perf?from=2026-11-21&to=2026-11-21")]
          (is (= 200 status))
          (is (= "2026-11-21T00:00:00Z" (get json "from")))
          (is (= "2026-11-21T23:59:59.999Z" (get json "to")))
          (is (= ["2026-11-21T15:07:00Z"] (map #(get % "minute") (get json "minutes")))))
        (is (= 1 (count (str/split-lines (:body (u/request base "/perf/log?from=2026-11-21&to=2026-11-21")))))))
      (finally (feed/stop! sys)))))
