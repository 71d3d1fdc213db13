(ns herald.flow.kafka-test
  "The :kafka-streams runtime: a windowed job with flow conditions gives what the in-process runtime gives, unsupported keys are refused naming the key, timers, hooks, failures, serdes, metrics, lazy loading."
  (:require [clojure.java.shell :as sh]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.flow :as flow]
            [herald.flow.kafka-broker :as kb]
            [herald.flow.kafka-support :as ks]
            [herald.flow.kafka.serde :as serde]
            [herald.flow.test-fns :as fns]))

(set! *warn-on-reflection* true)

(def ^:private t0 1763812800000)

(def windowed-job
  "Flow conditions split odd segments off to :odd; the rest is aggregated per :k in a fixed, a sliding and a
  global window whose triggers emit rows to :rows."
  {:job/name :windowed
   :workflow [[:in :route] [:route :agg] [:route :odd] [:agg :rows]]
   :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input}
             {:task/name :route :task/type :function :task/fn :herald.flow.test-fns/inc-n}
             {:task/name :agg :task/type :reduce :task/group-by-key :k :task/parallelism 2}
             {:task/name :odd :task/type :output :task/plugin :herald.flow.plugin/collecting-output}
             {:task/name :rows :task/type :output :task/plugin :herald.flow.plugin/collecting-output}]
   :flow-conditions [{:flow/from :route :flow/to [:odd] :flow/predicate [:not :herald.flow.test-fns/even-n?]}
                     {:flow/from :route :flow/to [:agg] :flow/predicate [:or :herald.flow.test-fns/small-k? :herald.flow.test-fns/even-n?]}]
   :windows [{:window/id :sum :window/task :agg :window/type :fixed :window/time-key :at :window/range [1 :second]
              :window/aggregation [:herald.flow/sum :n]}
             {:window/id :pct :window/task :agg :window/type :sliding :window/time-key :at :window/range 2000
              :window/slide 500 :window/aggregation [:herald.flow/percentiles :n]}
             {:window/id :count :window/task :agg :window/type :global :window/aggregation :herald.flow/count}]
   :triggers [{:trigger/window-id :sum :trigger/on :watermark :trigger/emit :herald.flow.test-fns/collect-value}
              {:trigger/window-id :pct :trigger/on :segment :trigger/threshold 3 :trigger/emit :herald.flow.test-fns/collect-value}
              {:trigger/window-id :count :trigger/on :segment :trigger/threshold 5 :trigger/refinement :discarding
               :trigger/emit :herald.flow.test-fns/collect-value}]})

(def ^:private segments
  "In event-time order; then one segment per group an hour later, whose watermark closes every earlier extent."
  (concat (for [i (range 240)] {:n (mod (* i 7) 23) :k (mod i 5) :at (+ t0 (* i 37))})
          (for [k (range 5)] {:n 1 :k k :at (+ t0 3600000)})))

(defn- completed? [seg] (= :job-completed (:event seg)))

(deftest ^:integration windows-and-flow-conditions-match-the-in-process-runtime
  (kb/with-broker bootstrap
    (let [want (ks/run-in-process windowed-job {:in segments})
          ;; a Kafka Streams application never completes: what the in-process job fired on completion is not expected
          want (update want :outputs update-vals #(vec (remove completed? %)))
          total (reduce + (map count (vals (:outputs want))))
          got (ks/run-on-kafka bootstrap windowed-job {:in segments} total {:partitions 1})]
      (is (< 100 (count (get-in want [:outputs :rows]))) "the job does fire")
      (is (some #(= :watermark (:event %)) (get-in want [:outputs :rows])))
      (is (some #(map? (:value %)) (get-in want [:outputs :rows])) "percentile rows: HdrHistogram state went through the store")
      (is (= (update-vals (:outputs want) frequencies) (update-vals (:outputs got) frequencies)) (:took got))
      (is (= 0 (:errors got)))
      (is (= "exactly_once_v2" (.getProperty ^java.util.Properties (:config got) "processing.guarantee")) "by default")
      (testing "metrics"
        (let [m (:metrics got)]
          (is (= :running (:status m)))
          (is (= "RUNNING" (get-in m [:kafka :state])))
          (is (= (count segments) (get-in m [:tasks :in :segments-in])))
          (is (= (count (get-in want [:outputs :odd])) (get-in m [:tasks :odd :segments-in])) "outputs are counted by their feeders")
          (is (= 0 (get-in m [:tasks :in :lag])) "the input is read to its end")
          (is (pos? (get-in m [:kafka :process-total]))))))))

(defn- refusal [job opts]
  (try (flow/submit-job job opts) nil
       (catch clojure.lang.ExceptionInfo e (assoc (ex-data e) :message (.getMessage e)))))

(def ^:private small
  {:workflow [[:in :f] [:f :out]]
   :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input :kafka/topic "in"}
             {:task/name :f :task/type :function :task/fn :herald.flow.test-fns/inc-n}
             {:task/name :out :task/type :output :task/plugin :herald.flow.plugin/collecting-output :kafka/topic "out"}]})

(def ^:private kafka-opts {:runtime :kafka-streams :kafka {:bootstrap-servers "127.0.0.1:1"}})

(deftest unsupported-keys-are-refused-at-submit-naming-the-key
  (testing "what cannot map onto Kafka Streams"
    (doseq [[job opts k] [[(update small :catalog assoc 0 (dissoc (first (:catalog small)) :kafka/topic)) kafka-opts :kafka/topic]
                          ;; an output without :kafka/topic runs its plugin (kafka_output_test); a blank topic is refused
                          [(update small :catalog assoc 2 (assoc (last (:catalog small)) :kafka/topic " ")) kafka-opts :kafka/topic]
                          [(update small :catalog assoc 2 (assoc (last (:catalog small)) :output/retries 3)) kafka-opts :output/retries]
                          [small (assoc kafka-opts :queue-capacity 8) :queue-capacity]
                          [small (assoc kafka-opts :fuse? false) :fuse?]
                          [(assoc small :lifecycles [{:lifecycle/task :out :lifecycle/calls :herald.flow.test-fns/counting-calls}])
                           kafka-opts :lifecycle/task]]]
      (let [r (refusal job opts)]
        (is (= [:herald.flow/unsupported k] [(:type r) (:key r)]) (pr-str r))
        (is (str/starts-with? (str (:message r)) "Not supported on :kafka-streams: ") (:message r)))))
  (testing "the options are checked against the model"
    (is (= [:herald.flow/invalid-job :kafka] ((juxt :type :key) (refusal small {:runtime :kafka-streams}))) "required")
    (is (= :kafka (:key (refusal small {:kafka {:bootstrap-servers "x"}}))) "only with :runtime :kafka-streams")
    (is (= :processing-guarantee (:key (refusal small (assoc-in kafka-opts [:kafka :processing-guarantee] :exactly-once)))))
    (is (= :bootstrap (:key (refusal small (assoc kafka-opts :kafka {:bootstrap "x"})))))
    (is (= :runtime (:key (refusal small {:runtime :flink}))))
    (is (= :kafka/serde (:key (refusal (assoc-in small [:catalog 1 :kafka/serde] :edn) kafka-opts)))
        "topics belong to inputs and outputs only"))
  (testing "a topic that does not exist"
    (kb/with-broker bootstrap
      (let [r (refusal small (assoc kafka-opts :kafka {:bootstrap-servers bootstrap :application-id (ks/fresh-prefix)}))]
        (is (= [:herald.flow/missing-topic :kafka/topic "in"] ((juxt :type :key :value) r)))
        (is (str/includes? (:message r) "does not exist"))))))

(deftest ^:integration in-process-users-do-not-load-kafka
  (let [log (java.io.File/createTempFile "herald-classes" ".log")
        code (str "(require 'herald.flow)"
                  "(def h (herald.flow/submit-job " (pr-str (update small :catalog (fn [c] (mapv #(dissoc % :kafka/topic) c))))
                  " {:inject {:in {:seq/segments [{:n 1}]} :out {:sink/atom (atom [])}}}))"
                  "(print (:status (herald.flow/await-job h 5000)) (boolean (find-ns 'herald.flow.kafka)))")
        r (sh/sh (str (System/getProperty "java.home") "/bin/java") (str "-Xlog:class+load=info:file=" log)
                 "-cp" (System/getProperty "java.class.path") "clojure.main" "-e" code)
        loaded (slurp log)]
    (.delete log)
    (is (= 0 (:exit r)) (:err r))
    (is (str/ends-with? (:out r) ":completed false") "the job ran and herald.flow.kafka was not loaded")
    (is (str/includes? loaded "herald.flow.impl.runtime") "the class-load log is the real one")
    (is (not (str/includes? loaded "org.apache.kafka")) "no Kafka class was loaded")))

(def ^:private timed-job
  {:job/name :timed
   :workflow [[:in :f] [:f :agg] [:agg :rows]]
   :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input}
             {:task/name :f :task/type :function :task/fn :herald.flow.test-fns/inc-n}
             {:task/name :agg :task/type :reduce}
             {:task/name :rows :task/type :output :task/plugin :herald.flow.plugin/collecting-output}]
   :windows [{:window/id :n :window/task :agg :window/type :global :window/aggregation :herald.flow/count}]
   :triggers [{:trigger/window-id :n :trigger/on :timer :trigger/period 200 :trigger/emit :herald.flow.test-fns/collect-value}]
   :lifecycles [{:lifecycle/task :f :lifecycle/calls :herald.flow.test-fns/counting-calls}]})

(defn- submit-with-topics [bootstrap job segments kafka]
  (let [p (ks/fresh-prefix)
        topics {:in (str p ".in") :rows (str p ".rows")}]
    (kb/create-topics! bootstrap (vals topics) 1)
    (kb/produce! bootstrap (:in topics) segments)
    [(flow/submit-job job (ks/kafka-opts bootstrap p topics kafka)) topics]))

(deftest ^:integration timers-lifecycles-and-failures
  (kb/with-broker bootstrap
    (testing "a timer trigger fires from a wall-clock punctuator; hooks run around each record (a batch of 1)"
      (reset! fns/hook-log [])
      (let [[h topics] (submit-with-topics bootstrap timed-job (concat (map #(hash-map :n %) (range 10)) ["not a map"])
                                           {:processing-guarantee :at-least-once :config {"commit.interval.ms" 50}})
            rows (with-open [c (kb/consumer bootstrap [(:rows topics)])]
                   (get (kb/poll-until c #(some (fn [r] (= 10 (:value r))) (get % (:rows topics))) 60000 600) (:rows topics)))]
        (is (= 1 (get-in (flow/job-metrics h) [:tasks :in :errors])) "a record that is not a map is an error of the input, not a crash")
        (is (= ["at_least_once" "50"] (map #(.getProperty ^java.util.Properties (:config h) %) ["processing.guarantee" "commit.interval.ms"]))
            "the guarantee is configurable; :config wins")
        (is (nil? (flow/await-job h 10)) "a streams job runs until killed")
        (is (= :killed (:status (flow/kill-job h))))
        (is (every? #(= :timer (:event %)) rows))
        (is (= 10 (:value (last rows))) "the count of every segment, fired by the timer")
        (is (apply < (map :value rows)) "fired only when the extent changed")
        (let [log @fns/hook-log]
          (is (= [:start [:f]] (first log)))
          (is (= 10 (count (filter #(= [:before 1 true] %) log))) "before-batch sees a batch of one and the start hook's event")
          (is (= 10 (count (filter #{[:after]} log))))
          (is (= [:stop [:f]] (last log))))))
    (testing "a hook that throws fails the job after the handle-exception hooks"
      (reset! fns/hook-log [])
      (let [[h] (submit-with-topics bootstrap (assoc timed-job :lifecycles [{:lifecycle/task :f :lifecycle/calls :herald.flow.test-fns/failing-calls}])
                                    [{:n 1}] {})
            st (flow/await-job h 60000)]
        (is (= :failed (:status st)))
        (is (= "hook broke" (some->> (:error st) (iterate #(.getCause ^Throwable %)) (take-while some?) ^Throwable (last) (.getMessage))))
        (is (= [[:handled :task "hook broke"]] @fns/hook-log))
        (is (= :failed (:status (flow/kill-job h))) "killing a failed job reports the failure")))))

(def edn-again
  "A custom serde a task can name with :kafka/serde."
  serde/edn)

(deftest serdes
  (let [seg {:n 1 :at #inst "2026-11-22T00:00:00Z" :tags #{:a} :ratio 1/3}
        round (fn [^org.apache.kafka.common.serialization.Serde sd x]
                (.deserialize (.deserializer sd) "t" (.serialize (.serializer sd) "t" x)))]
    (is (= seg (round serde/edn seg) (round serde/codec seg)))
    (is (= "{:n 1}" (String. ^bytes (.serialize (.serializer ^org.apache.kafka.common.serialization.Serde serde/edn) "t" {:n 1}) "UTF-8"))
        "EDN text on topics")
    (is (serde/undecodable? (.deserialize (.deserializer ^org.apache.kafka.common.serialization.Serde serde/edn) "t" (.getBytes "{:n")))
        "bytes that are not EDN are reported, not thrown")
    (is (not= (seq (.serialize (.serializer ^org.apache.kafka.common.serialization.Serde serde/group) "t" nil))
              (seq (.serialize (.serializer ^org.apache.kafka.common.serialization.Serde serde/group) "t" false)))
        "a nil group is a key of its own")
    (is (identical? serde/edn (serde/topic-serde {:task/name :in :kafka/serde :herald.flow.kafka-test/edn-again})))
    (is (= :kafka/serde (:key (ex-data (try (serde/topic-serde {:task/name :in :kafka/serde :herald.flow.test-fns/inc-n})
                                            (catch clojure.lang.ExceptionInfo e e))))))))
