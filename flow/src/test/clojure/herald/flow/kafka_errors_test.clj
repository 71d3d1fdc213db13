(ns herald.flow.kafka-errors-test
  "Errors on :kafka-streams: an `:on-error` that throws (a dead-letter topic that cannot be written) holds the record's offset and is retried until it works, across a thread replacement; with two stream threads each thread's batch has its own retry state and time budget."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.flow :as flow]
            [herald.flow.impl.retry :as retry]
            [herald.flow.kafka-broker :as kb]
            [herald.flow.kafka-support :as ks])
  (:import (java.util Properties)
           (java.util.concurrent TimeUnit)
           (org.apache.kafka.clients.admin Admin)
           (org.apache.kafka.clients.consumer OffsetAndMetadata)
           (org.apache.kafka.clients.producer KafkaProducer ProducerRecord)
           (org.apache.kafka.common.serialization StringSerializer)))

(set! *warn-on-reflection* true)

(defn check
  "The task fn: a segment with `:bad` throws (a record the job cannot apply)."
  [seg]
  (if (:bad seg) (throw (ex-info (str "bad segment " (:id seg)) {:id (:id seg)})) seg))

(defn flaky
  "The task fn of a segment with `:flaky`: throws the first time it sees it (`seen`: an atom of ids), then passes."
  [seen seg]
  (if (and (:flaky seg) (not (contains? (first (swap-vals! seen conj (:id seg))) (:id seg))))
    (throw (ex-info (str "flaky segment " (:id seg)) {:id (:id seg)}))
    seg))

(def job
  {:job/name :errors
   :workflow [[:in :check] [:check :out]]
   :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input}
             {:task/name :check :task/type :function :task/fn :herald.flow.kafka-errors-test/check}
             {:task/name :out :task/type :output :task/plugin :herald.flow.plugin/fn-output :task/batch-size 10
              :task/batch-timeout-ms 20}]})

(defn- committed
  "Application `app`'s committed offsets of `topic`'s partitions: {partition offset}."
  [^Admin admin app]
  (into {} (for [[^org.apache.kafka.common.TopicPartition tp ^OffsetAndMetadata o]
                 (.get (.partitionsToOffsetAndMetadata (.listConsumerGroupOffsets admin ^String app)) 10 TimeUnit/SECONDS)
                 :when o]
             [(.partition tp) (.offset o)])))

(defn- await-true [f timeout-ms]
  (let [deadline (+ (System/currentTimeMillis) timeout-ms)]
    (loop [] (cond (f) true
                   (> (System/currentTimeMillis) deadline) false
                   :else (do (Thread/sleep 20) (recur))))))

(defn- produce-to!
  "Writes `segments` (EDN text) to partition `part` of `topic`, acknowledged."
  [bootstrap topic part segments]
  (with-open [p (KafkaProducer. (doto (Properties.) (.put "bootstrap.servers" bootstrap) (.put "acks" "all"))
                                (StringSerializer.) (StringSerializer.))]
    (doseq [s segments] (.send p (ProducerRecord. ^String topic (int part) nil (pr-str s))))
    (.flush p)))

(deftest ^:integration a-failing-on-error-holds-the-offset-until-it-works
  (kb/with-broker bootstrap
    (let [app (ks/fresh-prefix) topic (str app ".in")
          written (atom []) handled (atom []) calls (atom 0) lines (atom [])
          healed (atom false)
          ;; [stream thread, ok?] of each call, in order
          threads (atom [])
          ;; the dead-letter topic refuses every record until healed: :on-error throws
          on-error (fn [e] (swap! calls inc)
                     (let [ok @healed]
                       (swap! threads conj [(.getName (Thread/currentThread)) ok])
                       (when-not ok (throw (ex-info "dead-letter topic refuses the record" {})))
                       (swap! handled conj (:segment e))))]
      (kb/create-topics! bootstrap [topic] 1)
      (kb/produce! bootstrap topic (for [i (range 20)] (cond-> {:id i} (= 10 i) (assoc :bad true))))
      (with-redefs [retry/log-line! (fn [s] (swap! lines conj s))]
        (with-open [admin (Admin/create (doto (Properties.) (.put "bootstrap.servers" bootstrap)))]
          (let [h (flow/submit-job job (-> (ks/kafka-opts bootstrap app {:in topic}
                                                          ;; a 3 s poll budget: a 4 s fault outlasts it and the stream
                                                          ;; thread is replaced
                                                          {:processing-guarantee :at-least-once
                                                           :config {"max.poll.interval.ms" 6000}})
                                           (assoc :checkpoint-interval-ms 100 :on-error on-error)
                                           (assoc-in [:inject :out :sink/fn] #(swap! written into %))))]
            (try
              (testing "while :on-error throws, the records before the bad one are written and the offset does not pass it"
                (is (await-true #(= (set (range 10)) (set (map :id @written))) 30000) (pr-str @written))
                (let [t0 (System/currentTimeMillis) samples (atom [])]
                  (while (< (- (System/currentTimeMillis) t0) 4000)
                    (swap! samples conj (get (committed admin app) 0 0))
                    (Thread/sleep 100))
                  ;; (how far below it depends on when the blocked thread last committed: a replaced thread reads
                  ;; the records before it again, at least once)
                  (is (every? #(<= % 10) @samples) (str "committed offsets passed the record being handled: " (vec (distinct @samples)))))
                (is (= #{} (set (filter #(<= 10 %) (map :id @written)))) "nothing after it went on")
                (is (< 2 @calls) (str "retried: " @calls " calls"))
                ;; (false for a moment between a replaced thread's end and its successor's first failure)
                (is (await-true #(true? (get-in (flow/job-metrics h) [:tasks :check :on-error-failing?])) 20000))
                (is (pos? (get-in (flow/job-metrics h) [:tasks :check :on-error-failures]))))
              (testing "once it works: the bad record is handled (at least once), the later ones flow, the offset moves on"
                (reset! healed true)
                (is (await-true #(= (set (remove #{10} (range 20))) (set (map :id @written))) 30000))
                (is (await-true #(= 20 (get (committed admin app) 0)) 30000) (pr-str (committed admin app)))
                (is (<= 1 (count @handled)) (pr-str @handled))
                (is (every? #(= {:id 10 :bad true} %) @handled))
                (is (nil? (flow/await-job h 10)) "the job still runs, its thread replaced")
                (is (false? (get-in (flow/job-metrics h) [:tasks :check :on-error-failing?])))
                ;; each stream thread that holds the record starts a run of its own (the run ends when its stream task
                ;; closes): one line per such run, none per attempt
                (let [runs (partition-by first @threads)
                      ok-run (some #(when (some second %) %) runs)]
                  (is (= (count (filter #(not-every? second %) runs))
                         (count (filter #(str/includes? % ":on-error of task :check of job :errors failing, retrying (forever") @lines)))
                      (str "one line per stream thread's run of failures: " (pr-str @lines) " " (pr-str @threads)))
                  (is (< (count runs) @calls) "fewer lines than attempts")
                  (is (= (if (some (complement second) ok-run) 1 0)
                         (count (filter #(str/includes? % "handling errors again") @lines)))
                      (pr-str @lines))))
              (finally (flow/kill-job h)))))))))

(deftest ^:integration two-stream-threads-have-their-own-give-up-budget
  ;; partition 0 holds a segment the output never writes; partition 1 a steady stream of good ones, written by the
  ;; other stream thread. With one retry state for both threads, each good write ended partition 0's run of failures
  ;; (its give-up clock started again), so its segment was never handed on and the partition waited for ever.
  (kb/with-broker bootstrap
    (let [app (ks/fresh-prefix) topic (str app ".in")
          written (atom []) threads (atom {}) dead (atom [])
          ;; {partition thread} of the last write of each partition: Kafka may give both tasks to one thread first
          ;; (the second thread joins the group a moment later), so the poison waits until they are on two
          owner (atom {}) feed-p0 (atom true)
          sink (fn [segs]
                 (let [t (.getName (Thread/currentThread))]
                   (swap! owner into (map (fn [s] [(:p s) t])) segs)
                   (swap! threads update (:p (first segs)) (fnil conj #{}) t))
                 (when (some :poison segs) (throw (ex-info "store refuses it" {})))
                 (swap! written into segs))
          stop (atom false)]
      (kb/create-topics! bootstrap [topic] 2)
      (with-redefs [retry/log-line! (fn [_])]
        (let [h (flow/submit-job (assoc-in job [:catalog 1 :task/fn] :clojure.core/identity)
                                 (-> (ks/kafka-opts bootstrap app {:in topic} {:processing-guarantee :at-least-once :threads 2})
                                     (assoc :checkpoint-interval-ms 100 :on-error #(swap! dead conj %))
                                     (update-in [:inject :out] merge
                                                {:sink/fn sink :output/retries :forever :output/backoff-ms 20
                                                 :output/backoff-max-ms 50 :output/give-up-after-ms 1500})))
              feeder (future (loop [i 0]
                               (when-not @stop
                                 (produce-to! bootstrap topic 1 [{:id (+ 1000 i) :p 1}])
                                 (when @feed-p0 (produce-to! bootstrap topic 0 [{:id (+ 2000 i) :p 0}]))
                                 (Thread/sleep 50)
                                 (recur (inc i)))))]
          (try
            (is (await-true #(let [o @owner] (and (o 0) (o 1) (not= (o 0) (o 1)))) 60000)
                (str "each partition's writes on a thread of its own: " @owner))
            (reset! feed-p0 false)
            (reset! threads {})
            (produce-to! bootstrap topic 0 [{:id 0 :p 0 :poison true} {:id 1 :p 0}])
            (is (await-true #(some #{1} (map :id @written)) 20000)
                "partition 0's segment after the one refused for good is written: the refused one was handed on")
            (is (= [{:id 0 :p 0 :poison true}] (map :segment @dead)) "only the refused segment, once")
            (is (every? #(= 1 (count %)) (vals @threads)) (str "one thread per partition: " @threads))
            (is (not= (get @threads 0) (get @threads 1)) (str "the two partitions on two threads: " @threads))
            (finally (reset! stop true) @feeder (flow/kill-job h))))))))

(deftest ^:integration a-run-of-on-error-failures-ends-when-its-stream-task-closes
  ;; a task error that does not come back when the record is read again (a flaky call), whose :on-error threw until
  ;; the stream thread was replaced: the successor applies the record and never calls :on-error for it again. The
  ;; run of failures belonged to the closed stream task; kept open, `:on-error-failing?` (the feed's
  ;; herald_feed_fanout_dead_letter_failing) said "failing" for ever on an instance whose jobs all flow.
  (kb/with-broker bootstrap
    (let [app (ks/fresh-prefix) topic (str app ".in")
          written (atom []) seen (atom #{}) calls (atom 0)]
      (kb/create-topics! bootstrap [topic] 1)
      (kb/produce! bootstrap topic (for [i (range 6)] (cond-> {:id i} (= 3 i) (assoc :flaky true))))
      (with-redefs [retry/log-line! (fn [_])]
        (let [h (flow/submit-job (assoc-in job [:catalog 1 :task/fn] :herald.flow.kafka-errors-test/flaky)
                                 (-> (ks/kafka-opts bootstrap app {:in topic}
                                                    {:processing-guarantee :at-least-once
                                                     :config {"max.poll.interval.ms" 4000}})
                                     (assoc :checkpoint-interval-ms 100
                                            :on-error (fn [_] (swap! calls inc) (throw (ex-info "dead-letter topic down" {}))))
                                     (assoc-in [:inject :check :task/params] [seen])
                                     (assoc-in [:inject :out :sink/fn] #(swap! written into %))))]
          (try
            (is (await-true #(true? (get-in (flow/job-metrics h) [:tasks :check :on-error-failing?])) 30000)
                "the :on-error of the flaky record fails")
            (is (await-true #(= (set (range 6)) (set (map :id @written))) 30000)
                (str "the successor applies the record and the later ones: " (pr-str @written)))
            (is (pos? @calls))
            (is (await-true #(false? (get-in (flow/job-metrics h) [:tasks :check :on-error-failing?])) 10000)
                (str "no :on-error is failing once every record went through: " (pr-str (get-in (flow/job-metrics h) [:tasks :check]))))
            (finally (flow/kill-job h))))))))

(deftest ^:integration kill-job-ends-a-retrying-on-error-at-once
  ;; kill-job while :on-error fails: the stream thread must stop retrying and give its tasks back (they commit
  ;; nothing past the record), not sleep on in its retry loop for up to half of max.poll.interval.ms after the
  ;; close returned, a member of the group meanwhile (a resubmit would wait for it)
  (kb/with-broker bootstrap
    (let [app (ks/fresh-prefix) topic (str app ".in") calls (atom [])]
      (kb/create-topics! bootstrap [topic] 1)
      (kb/produce! bootstrap topic [{:id 0} {:id 1 :bad true} {:id 2}])
      (with-redefs [retry/log-line! (fn [_])]
        (with-open [admin (Admin/create (doto (Properties.) (.put "bootstrap.servers" bootstrap)))]
          (let [h (flow/submit-job job (-> (ks/kafka-opts bootstrap app {:in topic}
                                                          ;; a 30 s poll budget
                                                          {:processing-guarantee :at-least-once
                                                           :config {"max.poll.interval.ms" 60000}})
                                           (assoc :checkpoint-interval-ms 100
                                                  :on-error (fn [_] (swap! calls conj (System/currentTimeMillis))
                                                              (throw (ex-info "dead-letter topic down" {}))))
                                           (assoc-in [:inject :out :sink/fn] (fn [_]))))]
            (is (await-true #(<= 4 (count @calls)) 30000) "the :on-error is retried")
            (let [t0 (System/currentTimeMillis)]
              (flow/kill-job h {:timeout-ms 20000})
              (let [t1 (System/currentTimeMillis)]
                (Thread/sleep 4000)
                (is (< (- t1 t0) 5000) (str "kill-job took " (- t1 t0) " ms"))
                (is (empty? (filter #(> % (+ t1 200)) @calls))
                    (str "no :on-error call after kill-job returned: " (mapv #(- % t1) @calls)))
                (is (<= (get (committed admin app) 0 0) 1) "the offset did not pass the record")))))))))
