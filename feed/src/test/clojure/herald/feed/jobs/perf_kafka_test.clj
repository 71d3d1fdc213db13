(ns herald.feed.jobs.perf-kafka-test
  "Tests of the per-minute figures cluster-wide on a real in-process KRaft broker: two instances recording the same minutes both show the figures of the union of their requests (merged HdrHistograms), an instance started later shows the past minutes, and a Kafka outage never blocks recording (dropped and counted)."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.feed.jobs.perf :as jperf]
            [herald.feed.jobs.perf-sender :as sender]
            [herald.feed.perf :as perf]
            [herald.feed.perf-model :as model]
            [herald.flow.kafka-broker :as kb]
            [herald.feed.test-util :as u]
            [herald.flow :as flow]
            [herald.flow.plugin :as plugin])
  (:import (org.apache.kafka.clients.producer KafkaProducer)
           (org.apache.kafka.common.serialization ByteArraySerializer)))

(set! *warn-on-reflection* true)

(def ^:private runs (atom 0))

(defn- events [bootstrap]
  {:type :kafka :bootstrap-servers bootstrap :topic-prefix (str "perf" (swap! runs inc) "-" (System/currentTimeMillis) ".")})

(defn- records
  "Deterministic pseudo-random request records over 3 minutes from `start-ms`, in time order."
  [n start-ms]
  (let [rnd (java.util.Random. 7)
        ops [[:outbound :post] [:inbound :get] [:participant :get]]]
    (sort-by peek
             (for [_ (range n)]
               (let [[e op] (nth ops (.nextInt rnd (count ops)))]
                 [e op (* 1000 (+ 50 (.nextInt rnd 100000))) (if (zero? (.nextInt rnd 25)) 500 200)
                  (+ start-ms (.nextInt rnd 180000))])))))

(defn- record-all! [r recs] (doseq [[e op nanos status at] recs] (perf/record! r e op nanos status at)))

(def ^:private lateness
  "The test replays three past minutes at once, from two instances: every batch must still count."
  600000)

(defn- recorder [ev dir]
  (jperf/flow-recorder {:events ev :data-dir dir :publish-ms 100 :send-ms 100 :sync-wait-ms 30000
                        :allowed-lateness-ms lateness}))

(deftest two-instances-show-the-cluster-minutes-and-a-later-one-the-past-ones
  (kb/with-broker bootstrap
    (let [ev (events bootstrap)
          dirs (vec (repeatedly 3 #(u/temp-dir "herald-perf-kafka")))
          start (* 60000 (- (quot (System/currentTimeMillis) 60000) 5))
          recs (records 3000 start)
          [mine theirs] [(take-nth 2 recs) (take-nth 2 (rest recs))]
          clock #(System/currentTimeMillis)
          a (recorder ev (dirs 0))
          b (recorder ev (dirs 1))]
      (try
        (record-all! a mine)
        (record-all! b theirs)
        (testing "each instance's view shows the merged figures of both instances' requests"
          (is (true? (perf/await-recorded a 60000)))
          (is (true? (perf/await-recorded b 60000)))
          (is (true? (perf/await-recorded a 60000)) "a reads what b's batches made")
          (let [expected (model/views (model/model recs clock lateness))]
            (is (= 9 (count (:figures expected))) "3 minutes x 3 entity-operations")
            (is (= expected (model/views a)))
            (is (= expected (model/views b)))))
        (testing "each minute names the instances whose requests it holds (the dashboard's instances)"
          (let [ids #{(perf/source-id a) (perf/source-id b)}
                m (quot start 60000)]
            (is (= 2 (count ids)))
            (is (every? #(re-matches #"[^/]+/\d+/[0-9a-f]{8}" %) ids) "host/pid/nonce")
            (is (= {m ids (inc m) ids (+ m 2) ids} (perf/minute-sources a m (+ m 2))))))
        (is (= {:recorded 1500 :dropped 0} (select-keys (perf/recorder-stats a) [:recorded :dropped])))
        (finally (is (true? (perf/close-recorder! a 20000))) (is (true? (perf/close-recorder! b 20000)))))
      (testing "an instance started later serves the past minutes from Kafka, and adds to them"
        (let [c (recorder ev (dirs 2))
              one-more [:outbound :post 3000000 200 (+ start 150000)]]
          (try
            (is (true? (perf/await-recorded c 60000)))
            (is (= (model/views (model/model recs clock lateness)) (model/views c)))
            (record-all! c [one-more])
            (is (true? (perf/await-recorded c 60000)))
            (is (= (:figures (model/views (model/model (conj (vec recs) one-more) clock lateness))) (vec (perf/figures c nil nil)))
                "the window state survived the application's restart: the newest minute is the sum")
            (finally (perf/close-recorder! c 20000)))))
      (run! u/delete-tree! dirs))))

(deftest a-minute-closes-when-the-clusters-watermark-passes-it
  (kb/with-broker bootstrap
    (let [dir (u/temp-dir "herald-perf-kafka")
          start (* 60000 (- (quot (System/currentTimeMillis) 60000) 3))
          ;; the clock never closes a minute here: only the job's final rows can
          r (jperf/flow-recorder {:events (events bootstrap) :data-dir dir :publish-ms 100 :send-ms 100
                                  :sync-wait-ms 30000 :allowed-lateness-ms 1000 :clock (constantly start)})]
      (try
        (perf/record! r :inbound :get 2000000 200 (+ start 1000))
        (is (true? (perf/await-recorded r 60000)))
        (is (= [[1 false]] (map (juxt :count :closed) (perf/figures r nil nil))) "open figures first")
        (perf/record! r :inbound :get 3000000 404 (+ start 62000))
        (is (true? (perf/await-recorded r 60000)))
        (is (= [[1 0 true] [1 1 false]] (map (juxt :count :errors :closed) (perf/figures r nil nil)))
            "the next minute's request, more than the lateness after the first minute's end, closed it")
        (finally (perf/close-recorder! r 20000) (u/delete-tree! dir))))))

(defn- thread-waits
  "[times waited, times blocked on a monitor] of the current thread so far (java.lang.management)."
  []
  (let [^java.lang.management.ThreadInfo ti (.getThreadInfo (java.lang.management.ManagementFactory/getThreadMXBean)
                                                              (.threadId (Thread/currentThread)))]
    [(.getWaitedCount ti) (.getBlockedCount ti)]))

(deftest recording-never-waits-for-kafka
  (let [port (with-open [s (java.net.ServerSocket. 0)] (.getLocalPort s))
        p (KafkaProducer. (doto (java.util.Properties.)
                            (.putAll {"bootstrap.servers" (str "127.0.0.1:" port) "max.block.ms" "200"
                                      "reconnect.backoff.max.ms" "10000"}))
                          (ByteArraySerializer.) (ByteArraySerializer.))
        mb (plugin/push-input {:task/name :requests :push/capacity 1000})
        lines (atom [])
        sd (sender/sender mb p "nowhere" "src" {:send-ms 20 :max-age-ms 0 :log (fn [& xs] (swap! lines conj (str/join " " xs)))})
        at (- (System/currentTimeMillis) 120000)]
    (try
      ;; Not timed (a loaded CI machine made any per-record bound a flake): the recording thread must never
      ;; wait (park, sleep, Object.wait) nor block on a lock while the sender is stuck in the producer's
      ;; 200 ms metadata waits; a recording that waited for room or for the producer would count here.
      (flow/offer! (plugin/push-input {:task/name :warm-up :push/capacity 1}) {}) ; loads the classes first
      (let [[waits0 blocks0] (thread-waits)
            _ (dotimes [i 5000] (flow/offer! mb {:entity :outbound :operation :post :us i :status 200 :at at}))
            [waits1 blocks1] (thread-waits)]
        (is (= [0 0] [(- waits1 waits0) (- blocks1 blocks0)])
            "[waits blocks] of the recording thread while recording 5000 records with Kafka down"))
      (let [deadline (+ (System/currentTimeMillis) 60000)]
        (while (and (< (:dropped (sender/stats sd)) (- 5000 (:dropped (flow/push-stats mb)))) (< (System/currentTimeMillis) deadline))
          (Thread/sleep 50)))
      (testing "what the input took is dropped and counted once it is too old to send; the rest was refused"
        (is (= 5000 (+ (:dropped (sender/stats sd)) (:dropped (flow/push-stats mb))))))
      (Thread/sleep 1500)
      (testing "one log line for the outage, not one per record or per try"
        (is (= 1 (count (filter #(str/includes? % "cannot reach Kafka") @lines))) (pr-str @lines)))
      (finally (sender/close! sd 1000) (.close p (java.time.Duration/ofMillis 100))))))
