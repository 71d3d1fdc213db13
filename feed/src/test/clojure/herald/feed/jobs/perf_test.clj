(ns herald.feed.jobs.perf-test
  "Tests of the per-minute performance job in-process behind the Recorder protocol: the figures of the union of the requests (a plain HdrHistogram per minute), closed minutes stored and restored (also across a torn line), late records counted, options named."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.jobs.minutes :as minutes]
            [herald.feed.jobs.perf :as jperf]
            [herald.feed.perf :as perf]
            [herald.feed.perf-model :as model]
            [herald.feed.test-util :as u]))

(set! *warn-on-reflection* true)

(def ^:private t0 (perf/parse-time "2026-11-22T13:05:00Z" "from"))

(defn- records
  "Deterministic pseudo-random request records over `minutes` minutes from t0, in time order."
  [n minutes]
  (let [rnd (java.util.Random. 42)
        ops [[:outbound :post] [:inbound :get] [:participant :get] [:outbound :search]]]
    (sort-by peek
             (for [_ (range n)]
               (let [[e op] (nth ops (.nextInt rnd (count ops)))]
                 [e op (* 1000 (+ 50 (.nextInt rnd 200000))) (if (zero? (.nextInt rnd 20)) 404 200)
                  (+ t0 (.nextInt rnd (* 60000 minutes)))])))))

(defn- record-all! [r recs] (doseq [[e op nanos status at] recs] (perf/record! r e op nanos status at)))

(deftest the-job-computes-the-figures-of-the-requests
  (let [recs (records 20000 5)
        clock (constantly (+ t0 (* 10 60000)))
        expected (model/model recs clock 0)
        job (jperf/flow-recorder {:clock clock :publish-ms 20 :allowed-lateness-ms 0})]
    (try
      (record-all! job recs)
      (is (true? (perf/await-recorded job 60000)))
      (let [a (vec (perf/figures expected nil nil)) b (vec (perf/figures job nil nil))]
        (is (= 20 (count a)) "5 minutes x 4 entity-operations")
        (is (= a b) "count, median, p95, p99, max, errors and closed agree"))
      (is (= (vec (perf/log-lines expected (+ t0 60000) (+ t0 119999))) (vec (perf/log-lines job (+ t0 60000) (+ t0 119999)))))
      (is (= (perf/status-counts expected) (perf/status-counts job)))
      (is (= (update-vals (perf/totals expected) #(dissoc % :histogram)) (update-vals (perf/totals job) #(dissoc % :histogram))))
      (is (= {:recorded 20000 :dropped 0 :late 0} (select-keys (perf/recorder-stats job) [:recorded :dropped :late])))
      (finally (is (true? (perf/close-recorder! job 10000)))))))

(deftest open-minutes-show-at-once-and-close-by-time-or-watermark
  (let [now (atom (+ t0 30000))
        r (jperf/flow-recorder {:clock #(deref now) :publish-ms 20 :allowed-lateness-ms 5000})]
    (try
      (perf/record! r :outbound :post 2000000 200 (+ t0 1000))
      (testing "a view waits for the job: the request shows at once, in an open minute"
        (is (= [[1 false]] (map (juxt :count :closed) (perf/figures r nil nil)))))
      (testing "a minute closes once its end plus the lateness is past"
        (reset! now (+ t0 64000))
        (is (= [false] (map :closed (perf/figures r nil nil))))
        (reset! now (+ t0 65000))
        (is (= [true] (map :closed (perf/figures r nil nil)))))
      (testing "or when the watermark passes it: later records make it final"
        (reset! now t0)
        (perf/record! r :outbound :post 3000000 500 (+ t0 70000))
        (is (= [[1 0 true] [1 1 false]] (map (juxt :count :errors :closed) (perf/figures r nil nil))))
        (testing "a record of a final minute is late: counted, not added"
          (perf/record! r :outbound :post 4000000 200 (+ t0 2000))
          (is (true? (perf/await-recorded r 60000)))
          (is (= 1 (:late (perf/recorder-stats r))))
          (is (= [1 1] (map :count (perf/figures r nil nil))))))
      (finally (perf/close-recorder! r 10000)))))

(deftest closed-minutes-survive-a-restart
  (let [dir (u/temp-dir "herald-perf-minutes")
        clock (constantly (+ t0 (* 10 60000)))
        recs (records 3000 3)
        opts {:clock clock :publish-ms 20 :allowed-lateness-ms 0 :dir dir}]
    (try
      (let [r1 (jperf/flow-recorder opts)]
        (record-all! r1 recs)
        (is (true? (perf/close-recorder! r1 10000)) "closing finishes the open minutes and stores them"))
      (let [r2 (jperf/flow-recorder opts)
            one-more [:outbound :post 1000000 200 (+ t0 (* 2 60000) 5)]]
        (try
          (is (= (vec (perf/figures (model/model recs clock 0) nil nil)) (vec (perf/figures r2 nil nil)))
              "the second run serves the first run's minutes")
          (testing "a minute taking requests in two runs is the sum of both"
            (record-all! r2 [one-more])
            (is (= (vec (perf/figures (model/model (conj (vec recs) one-more) clock 0) nil nil)) (vec (perf/figures r2 nil nil)))))
          (finally (perf/close-recorder! r2 10000))))
      (testing "a torn last line (a crash mid-write) is skipped and later lines still read"
        (let [f (first (filter #(str/ends-with? (.getName ^java.io.File %) ".edn") (.listFiles (io/file dir))))
              before (count (minutes/load-rows dir 0))]
          (spit f "{:run \"x\" :minute 2" :append true)
          (is (= 1 (:skipped (meta (minutes/load-rows dir 0)))))
          (minutes/append! dir [{:run "y" :minute (quot t0 60000) :entity :inbound :operation :get :statuses {200 1}
                                 :histogram (doto (org.HdrHistogram.Histogram. 3) (.recordValue 5))}])
          (is (= (inc before) (count (minutes/load-rows dir 0))))))
      (testing "files older than the retention are deleted"
        (is (= 1 (minutes/prune! dir (+ (quot t0 60000) (* 24 60)))))
        (is (empty? (minutes/load-rows dir 0))))
      (finally (u/delete-tree! dir)))))

(deftest figures-survive-a-restart-of-the-service
  (let [dir (u/temp-dir "herald-feed-perf-restart")]
    (try
      (let [sys (u/start-feed! dir)
            base (feed/url sys)]
        (dotimes [i 7] (u/request base "/participant" :method :post :json {:name (str "p" i)}))
        (u/request base "/participant/999")
        (let [before (get-in (u/request base "/perf") [:json "minutes"])]
          (feed/stop! sys)
          (let [again (u/start-feed! dir)]
            (try
              (let [after (get-in (u/request (feed/url again) "/perf") [:json "minutes"])]
                (is (= 7 (reduce + (map #(get % "count") (filter #(= "post" (get % "operation")) before)))))
                (is (= (map #(dissoc % "closed") before) (map #(dissoc % "closed") after))))
              (finally (feed/stop! again))))))
      (finally (u/delete-tree! dir)))))

(deftest options-are-validated-naming-the-key
  (let [e #(try (perf/close-recorder! (jperf/flow-recorder %) 1000) nil (catch clojure.lang.ExceptionInfo e (ex-data e)))]
    (is (= {:type :herald.feed/config :key [:perf :publish-ms] :value 0} (e {:publish-ms 0})))
    (is (= [:perf :retention-minutes] (:key (e {:retention-minutes -1}))))
    (is (= [:perf :publish] (:key (e {:publish 5}))))
    (is (nil? (e {:allowed-lateness-ms 0})))
    (testing "with Kafka events, the :events keys it reads, before connecting to anything"
      (is (= {:type :herald.feed/config :key [:events :bootstrap-servers] :value nil} (e {:events {:type :kafka}})))
      (is (= [:events :topic-prefix] (:key (e {:events {:type :kafka :bootstrap-servers "127.0.0.1:1" :topic-prefix "a b"}}))))
      (is (= [:perf :events] (:key (e {:events {:type :kafak}})))))))
