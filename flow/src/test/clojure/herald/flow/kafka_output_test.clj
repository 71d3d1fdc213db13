(ns herald.flow.kafka-output-test
  "Plugin outputs on :kafka-streams: batches reach -write!, -flush! runs before every commit (committed offsets never pass an unflushed segment), and a job killed cleanly or stopped uncleanly loses no segment when resubmitted."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.flow :as flow]
            [herald.flow.kafka-broker :as kb]
            [herald.flow.kafka-support :as ks]
            [herald.flow.impl.retry :as retry]
            [clojure.string :as str]
            [herald.flow.spi :as spi])
  (:import (java.util Properties)
           (java.util.concurrent TimeUnit)
           (org.apache.kafka.clients.admin Admin OffsetSpec)
           (org.apache.kafka.clients.consumer OffsetAndMetadata)))

(set! *warn-on-reflection* true)

(defn durable-output
  "An output like a store that loses what was written but not flushed when its process dies: `-write!`
  buffers, `-flush!` moves the buffer into the atom `:sink/durable` (a vector), close drops the buffer.
  `:sink/batches` (an atom) gets the size of every write, `:sink/written` (an atom) every batch written."
  [task]
  (let [durable (spi/option task :sink/durable #(instance? clojure.lang.IAtom %) "an atom")
        batches (:sink/batches task)
        written (:sink/written task)
        buf (atom [])]
    (reify spi/Output
      (-write! [_ segs]
        (some-> batches (swap! conj (count segs)))
        (some-> written (swap! conj segs))
        (swap! buf into segs))
      (-flush! [_] (let [b @buf] (reset! buf []) (swap! durable into b)))
      (-close-output! [_] (reset! buf [])))))

(defn flaky-output
  "A `durable-output` whose writes throw until the time in the atom `:sink/down-until` (epoch ms), and its flushes
  too when `:sink/flush-down?` (a store that is down refuses both); counts its constructions in the atom
  `:sink/built`."
  [task]
  (let [out (durable-output task) down-until (:sink/down-until task)
        down! #(when (< (System/currentTimeMillis) (long @down-until)) (throw (ex-info "store down" {})))]
    (swap! (:sink/built task) inc)
    (reify spi/Output
      (-write! [_ segs] (down!) (spi/-write! out segs))
      (-flush! [_] (when (:sink/flush-down? task) (down!)) (spi/-flush! out))
      (-close-output! [_] (spi/-close-output! out)))))

(def crash-after
  "Records the :tag task processes before it crashes (nil: never)."
  (atom nil))

(def crash-calls
  "Hooks whose after-batch throws once `crash-after` records went by: the stream thread dies and its tasks
  close dirty (no commit), as in a crash of the process."
  {:lifecycle/after-batch (fn [_ _] (when (some-> (swap! crash-after #(some-> % dec)) (<= 0)) (throw (ex-info "simulated crash" {}))) nil)})

(defn tag [seg] (assoc seg :seen true))

(def job
  {:job/name :plugin-out
   :workflow [[:in :tag] [:tag :out]]
   :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input}
             {:task/name :tag :task/type :function :task/fn :herald.flow.kafka-output-test/tag}
             {:task/name :out :task/type :output :task/plugin :herald.flow.kafka-output-test/durable-output}]
   :lifecycles [{:lifecycle/task :tag :lifecycle/calls :herald.flow.kafka-output-test/crash-calls}]})

(defn- committed
  "The sum of application `app`'s committed offsets (records of its input committed as processed)."
  ^long [^Admin admin app]
  (let [m (.get (.partitionsToOffsetAndMetadata (.listConsumerGroupOffsets admin ^String app)) 10 TimeUnit/SECONDS)]
    (reduce + 0 (for [[_ ^OffsetAndMetadata o] m :when o] (.offset o)))))

(defn- ids [segs] (set (map :id segs)))

(defn- await-count [a n timeout-ms]
  (let [deadline (+ (System/currentTimeMillis) timeout-ms)]
    (loop [] (when (and (< (count (ids @a)) n) (< (System/currentTimeMillis) deadline)) (Thread/sleep 20) (recur)))
    (count (ids @a))))

(defn- opts [bootstrap app topics durable extra]
  (-> (ks/kafka-opts bootstrap app topics (merge {:processing-guarantee :at-least-once} (:kafka extra)))
      (assoc :checkpoint-interval-ms (:commit-ms extra 100))
      (assoc-in [:inject :out] (merge {:sink/durable durable} (:out extra)))))

(deftest ^:integration flush-runs-before-every-commit
  (kb/with-broker bootstrap
    (let [app (ks/fresh-prefix) topics {:in (str app ".in")}
          durable (atom []) batches (atom [])
          _ (kb/create-topics! bootstrap (vals topics) 2)
          ;; big batches and a long timeout: segments are written only when a commit comes (or a batch fills)
          h (flow/submit-job job (opts bootstrap app topics durable
                                       {:out {:task/batch-size 400 :task/batch-timeout-ms 600000 :sink/batches batches}}))
          samples (atom [])]
      (try
        (with-open [admin (Admin/create (doto (Properties.) (.put "bootstrap.servers" bootstrap)))]
          (let [sampler (future (while (not (Thread/interrupted))
                                  ;; committed first, flushed after: committed <= flushed must hold at every sample
                                  (let [c (committed admin app) d (count @durable)]
                                    (swap! samples conj [c d])
                                    (Thread/sleep 10))))]
            (doseq [[half chunks] (map vector [:first :second] (partition 15 (partition-all 100 (for [i (range 3000)] {:id i}))))]
              (doseq [chunk chunks]
                (kb/produce! bootstrap (:in topics) chunk)
                (Thread/sleep 30))
              ;; the second half waits for a commit of the first (a loaded machine's stream thread could otherwise
              ;; take all 3000 between two commits): the sampler then sees one in the middle of the stream
              (when (= :first half)
                (let [deadline (+ (System/currentTimeMillis) 60000)]
                  (while (and (not (some (fn [[c _]] (pos? (long c))) @samples)) (< (System/currentTimeMillis) deadline))
                    (Thread/sleep 20)))))
            (is (= 3000 (await-count durable 3000 60000)) "every segment was written and flushed")
            (Thread/sleep 500)
            (future-cancel sampler)
            (let [s @samples]
              (is (every? (fn [[c d]] (<= c d)) s) (str "committed offsets passed unflushed segments: " (remove (fn [[c d]] (<= c d)) s)))
              (is (some (fn [[c _]] (< 0 c 3000)) s) "the sampler saw commits in the middle of the stream")
              (is (< 1 (count (set (map first s)))) "several commits"))
            (is (every? #(<= 1 % 400) @batches) "writes are batches of at most :task/batch-size")
            (is (< (count @batches) 3000) "segments were gathered into batches")
            (is (= 3000 (get-in (flow/job-metrics h) [:tasks :out :segments-in])))))
        (finally (flow/kill-job h))))))

(defn- produce-to-partitions!
  "Writes `per-partition` segments {:id i :p partition} to each of the `n` partitions of `topic`."
  [bootstrap topic n per-partition]
  (with-open [p (org.apache.kafka.clients.producer.KafkaProducer.
                 (doto (Properties.) (.put "bootstrap.servers" bootstrap) (.put "acks" "all"))
                 (org.apache.kafka.common.serialization.StringSerializer.)
                 (org.apache.kafka.common.serialization.StringSerializer.))]
    (doseq [part (range n) i (range per-partition)]
      (.send p (org.apache.kafka.clients.producer.ProducerRecord. ^String topic (int part) nil (pr-str {:id (+ (* 1000 part) i) :p part}))))
    (.flush p)))

(deftest ^:integration the-stream-tasks-of-a-thread-share-one-batch
  (kb/with-broker bootstrap
    (let [app (ks/fresh-prefix) topics {:in (str app ".in")}
          written (atom [])
          _ (kb/create-topics! bootstrap (vals topics) 4)
          ;; no commit and no timeout for 10 minutes: only a full batch (40) writes; a batch per stream task
          ;; (10 segments each) would never fill
          h (flow/submit-job job (opts bootstrap app topics (atom [])
                                       {:out {:task/batch-size 40 :task/batch-timeout-ms 600000 :sink/written written}
                                        :commit-ms 600000}))]
      (try
        (produce-to-partitions! bootstrap (:in topics) 4 10)
        (let [deadline (+ (System/currentTimeMillis) 60000)]
          (while (and (empty? @written) (< (System/currentTimeMillis) deadline)) (Thread/sleep 20)))
        (is (= [40] (map count @written)) "one write of the four partitions' segments")
        (is (= #{0 1 2 3} (set (map :p (first @written)))))
        (finally (flow/kill-job h))))))

(deftest ^:integration kill-and-unclean-stop-lose-no-segment
  (kb/with-broker bootstrap
    (let [app (ks/fresh-prefix) topics {:in (str app ".in")}
          durable (atom [])
          submit #(flow/submit-job job (opts bootstrap app topics durable {:out {:task/batch-size 50} :commit-ms 300}))
          produce! (fn [from to] (kb/produce! bootstrap (:in topics) (for [i (range from to)] {:id i})))
          n 4000]
      (kb/create-topics! bootstrap (vals topics) 2)
      (reset! crash-after nil)
      (produce! 0 1000)
      (testing "kill-job mid-stream: it commits, so what it committed was flushed"
        (let [h (submit)]
          (future (produce! 1000 2000))
          (await-count durable 300 60000)
          (is (= :killed (:status (flow/kill-job h))))))
      (testing "an unclean stop (the stream thread dies; no commit; unflushed writes dropped)"
        (produce! 2000 3000)
        (reset! crash-after 300)
        (let [h (submit)]
          (is (= :failed (:status (flow/await-job h 60000))))
          (is (< (count (ids @durable)) 3000) "the crash came mid-stream")))
      (testing "resubmitted: every input segment reaches the output at least once"
        (reset! crash-after nil)
        (produce! 3000 n)
        (let [h (submit)]
          (try
            (is (= n (await-count durable n 90000)))
            (is (= (set (range n)) (ids @durable)))
            (is (every? :seen @durable))
            (finally (flow/kill-job h))))))))

(deftest ^:integration retries-outlast-max-poll-interval-by-replacing-the-thread
  (kb/with-broker bootstrap
    (let [app (ks/fresh-prefix) topics {:in (str app ".in")}
          durable (atom []) built (atom 0) lines (atom [])
          down-until (atom Long/MAX_VALUE)
          n 500]
      (kb/create-topics! bootstrap (vals topics) 2)
      (kb/produce! bootstrap (:in topics) (for [i (range n)] {:id i}))
      ;; each line with the stream thread that logged it (a failure message then says whose run it was)
      (with-redefs [retry/log-line! (fn [s] (swap! lines conj (let [t (Thread/currentThread)] (str s " [" (.getName t) " " (System/identityHashCode t) "]"))))]
        (testing "a store down for longer than half of max.poll.interval.ms: the thread is replaced, nothing is lost"
          (let [h (flow/submit-job (assoc-in job [:catalog 2 :task/plugin] :herald.flow.kafka-output-test/flaky-output)
                                   (opts bootstrap app topics durable
                                         ;; flushes fail too: one that succeeded while writes fail (a fresh stream
                                         ;; thread commits before its first write) would end the run of failures
                                         ;; and start another, one more "failing" line than the store's outages
                                         {:out {:sink/down-until down-until :sink/built built :sink/flush-down? true
                                                :output/retries :forever :output/backoff-ms 200 :output/backoff-max-ms 1000}
                                          :kafka {:config {"max.poll.interval.ms" 6000}}}))]
            (try
              ;; the store is down from the start; the 8 s outage counts from the first failed write (a stream
              ;; thread that took 5 s to get its tasks on a loaded machine failed only 3 s and was never replaced)
              (is (loop [t (+ (System/currentTimeMillis) 60000)]
                    (cond (pos? (get-in (flow/job-metrics h) [:tasks :out :write-failures] 0)) true
                          (> (System/currentTimeMillis) t) false
                          :else (do (Thread/sleep 20) (recur t))))
                  "the writes fail")
              (reset! down-until (+ (System/currentTimeMillis) 8000))
              (is (= n (await-count durable n 90000)))
              (is (= (set (range n)) (ids @durable)))
              (is (nil? (flow/await-job h 10)) "the job still runs")
              (is (>= @built 3) "the plugin was closed and built again on a new thread (2 at the start: 1 checked at submit, 1 for the stream thread's tasks)")
              (let [m (get-in (flow/job-metrics h) [:tasks :out])]
                (is (pos? (:write-failures m)))
                (is (false? (:failing? m))))
              (let [failing (count (filter #(str/includes? % "failing, retrying (forever") @lines))
                    again (count (filter #(str/includes? % "writing again") @lines))]
                (is (<= 1 failing 2) (str "one line per stream task (2 partitions) when it starts failing, none per attempt "
                                          "nor per thread replacement: " (pr-str @lines)))
                (is (= failing again) (str "and one when it works again: " (pr-str @lines))))
              (finally (flow/kill-job h))))))
      (testing "past :output/retries the job fails"
        (reset! down-until Long/MAX_VALUE)
        (kb/produce! bootstrap (:in topics) [{:id n}])
        (let [h (flow/submit-job (assoc-in job [:catalog 2 :task/plugin] :herald.flow.kafka-output-test/flaky-output)
                                 (opts bootstrap (ks/fresh-prefix) topics (atom [])
                                       {:out {:sink/down-until down-until :sink/built built :output/retries 2 :output/backoff-ms 50}}))
              st (flow/await-job h 60000)]
          (is (= :failed (:status st)))
          (is (= "store down" (some->> (:error st) (iterate #(.getCause ^Throwable %)) (take-while some?) ^Throwable (last) (.getMessage)))))))))

(deftest a-plugin-output-refusing-its-options-refuses-the-job-at-submit
  (let [r (try (flow/submit-job job {:runtime :kafka-streams :inject {:in {:kafka/topic "in"}}
                                     :kafka {:bootstrap-servers "127.0.0.1:1"}})
               nil
               (catch clojure.lang.ExceptionInfo e (ex-data e)))]
    (is (= [:herald.flow/invalid-job :sink/durable :out] ((juxt :type :key :task) r))
        "the constructor's own check, before any broker is asked")))

;; --- segments the plugin rejects for good (:output/rejected?) ----------------------------------------------------

(defn picky-output
  "A `flaky-output` (down until `:sink/down-until`, an outage: nothing is refused while down) that also refuses,
  for good, every batch holding a segment with `:bad` (ex-info {:rejected true}), as a store refuses a bad value;
  counts write attempts in the atom `:sink/attempts`."
  [task]
  (let [out (flaky-output task) attempts (:sink/attempts task) down-until (:sink/down-until task)]
    (reify spi/Output
      (-write! [_ segs]
        (swap! attempts inc)
        (when (and (some :bad segs) (>= (System/currentTimeMillis) (long @down-until)))
          (throw (ex-info "bad value" {:rejected true})))
        (spi/-write! out segs))
      (-flush! [_] (spi/-flush! out))
      (-close-output! [_] (spi/-close-output! out)))))

(defn rejected?
  "The :output/rejected? of `picky-output`."
  [e]
  (boolean (:rejected (ex-data e))))

(deftest ^:integration a-segment-rejected-for-good-goes-to-on-error-and-an-outage-is-retried
  (kb/with-broker bootstrap
    (let [app (ks/fresh-prefix) topics {:in (str app ".in")}
          durable (atom []) built (atom 0) attempts (atom 0) dead (atom [])
          down-until (atom Long/MAX_VALUE)
          n 300 bad #{17 150 299}]
      (kb/create-topics! bootstrap (vals topics) 2)
      (kb/produce! bootstrap (:in topics) (for [i (range n)] (cond-> {:id i} (bad i) (assoc :bad true))))
      (with-redefs [retry/log-line! (fn [_])]
        (let [h (flow/submit-job (assoc-in job [:catalog 2 :task/plugin] :herald.flow.kafka-output-test/picky-output)
                                 (-> (opts bootstrap app topics durable
                                           {:out {:sink/down-until down-until :sink/built built :sink/attempts attempts
                                                  :output/retries :forever :output/backoff-ms 20 :output/backoff-max-ms 100
                                                  :output/rejected? :herald.flow.kafka-output-test/rejected?
                                                  :output/rejected-retries 3}})
                                     (assoc :on-error #(swap! dead conj %))))]
          (try
            (testing "while the output is down (not a rejection) nothing is handed on: it is retried"
              (let [deadline (+ (System/currentTimeMillis) 60000)]
                ;; more failed attempts than :output/rejected-retries allows rejections
                (while (and (< @attempts 8) (< (System/currentTimeMillis) deadline)) (Thread/sleep 20)))
              (is (<= 8 @attempts))
              (is (= [] @dead))
              (is (= 0 (count @durable)))
              (reset! down-until 0))
            (testing "after the outage, the good segments are written and the rejected ones go to :on-error, once each"
              (is (= (- n (count bad)) (await-count durable (- n (count bad)) 60000)))
              (let [deadline (+ (System/currentTimeMillis) 60000)]
                (while (and (< (count @dead) (count bad)) (< (System/currentTimeMillis) deadline)) (Thread/sleep 20)))
              (is (= (set (remove bad (range n))) (ids @durable)))
              (is (= bad (set (map (comp :id :segment) @dead))))
              (is (= (count bad) (count @dead)) "each once")
              (is (every? #(= :out (:task %)) @dead))
              (is (every? #(= "bad value" (ex-message (:exception %))) @dead)))
            (testing "the job goes on: later segments are written; the metrics count the rejected segments"
              (kb/produce! bootstrap (:in topics) [{:id n}])
              (is (= (inc (- n (count bad))) (await-count durable (inc (- n (count bad))) 30000)))
              (is (nil? (flow/await-job h 10)) "the job still runs")
              (let [m (get-in (flow/job-metrics h) [:tasks :out])]
                (is (= (count bad) (:rejected-segments m)))
                (is (false? (:failing? m)))))
            (finally (flow/kill-job h))))))))
