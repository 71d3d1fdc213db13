(ns herald.flow.bench-kafka
  "The Onyx 0.6.0 benchmark job (input -> 4 increment tasks -> output that discards) on herald.flow's
  :kafka-streams runtime, against a KRaft broker started in this JVM (herald.flow.kafka-broker: free ports,
  a temp dir, stopped when the JVM exits). Run by bench/flow.sh; see bench/README.md."
  (:require [clojure.string :as str]
            [herald.flow :as flow]
            [herald.flow.bench :as bench]
            [herald.flow.kafka-broker :as kb]
            [herald.flow.kafka-support :as ks]
            [herald.flow.spi :as spi])
  (:import (herald.flow.log RecordCodec)
           (java.lang.management ManagementFactory ThreadMXBean)
           (java.util Properties)
           (java.util.concurrent ThreadLocalRandom)
           (java.util.concurrent.atomic AtomicLong)
           (org.apache.kafka.clients.producer KafkaProducer ProducerRecord)
           (org.apache.kafka.common.serialization ByteArraySerializer)))

(set! *warn-on-reflection* true)

;; What the counting output saw in the current run: segments written and the time the first and the
;; target-th arrived (System/nanoTime, 0 = not yet).
(def ^:private ^AtomicLong written (AtomicLong.))
(def ^:private ^AtomicLong first-at (AtomicLong.))
(def ^:private ^AtomicLong all-at (AtomicLong.))
(def ^:private target (volatile! Long/MAX_VALUE))

(defn counting-output
  "An output that drops its segments, as the in-process benchmark's, and counts them (to time the run)."
  [_]
  (reify spi/Output
    (-write! [_ segs]
      (let [now (System/nanoTime) n (.addAndGet written (count segs))]
        (.compareAndSet first-at 0 now)
        (when (>= n (long @target)) (.compareAndSet all-at 0 now))))
    (-flush! [_])
    (-close-output! [_])))

(defn job
  "The benchmark job for Kafka Streams: the input reads its topic with `serde`; `batch` is its
  :task/batch-size (so max.poll.records), nil for Kafka's default."
  [serde batch]
  {:job/name :onyx-bench-kafka
   :workflow [[:in :inc1] [:inc1 :inc2] [:inc2 :inc3] [:inc3 :inc4] [:inc4 :out]]
   :catalog (into [(cond-> {:task/name :in :task/type :input :task/plugin :herald.flow.plugin/seq-input :kafka/serde serde}
                     batch (assoc :task/batch-size batch))
                   {:task/name :out :task/type :output :task/plugin :herald.flow.bench-kafka/counting-output}]
                  (for [i (range 1 5)] {:task/name (keyword (str "inc" i)) :task/type :function :task/fn :herald.flow.bench/inc-n}))})

(def ^:private payload
  "The segments' 100-byte payload, as a string: herald's codec has no tag for byte arrays (it would write
  the in-process benchmark's `(byte-array 100)` as an `#object` EDN tagged literal, losing the bytes, and read
  it back with the EDN reader)."
  (apply str (repeat 100 \x)))

(defn- segment-bytes ^bytes [serde]
  (let [s {:n (.nextInt (ThreadLocalRandom/current) 10000) :data payload}]
    (if (= serde :codec)
      (RecordCodec/encode s)
      (let [^String t (binding [*print-length* nil] (pr-str s))] (.getBytes t java.nio.charset.StandardCharsets/UTF_8)))))

(defn- preload!
  "Writes `n` segments to `topic` (no key: spread over its partitions) and waits for the acks; returns ms."
  [bootstrap topic n serde]
  (let [t0 (System/nanoTime)]
    (with-open [p (KafkaProducer. (doto (Properties.)
                                    (.putAll {"bootstrap.servers" bootstrap "acks" "1" "linger.ms" "20"
                                              "batch.size" "262144" "buffer.memory" "134217728"
                                              "partitioner.ignore.keys" "true"}))
                                  (ByteArraySerializer.) (ByteArraySerializer.))]
      (dotimes [_ n] (.send p (ProducerRecord. ^String topic nil (segment-bytes serde))))
      (.flush p))
    (quot (- (System/nanoTime) t0) 1000000)))

(defn- thread-cpu
  "Thread id -> [name cpu-ns] of the live threads."
  [^ThreadMXBean mx]
  (into {} (for [^java.lang.management.ThreadInfo ti (.getThreadInfo mx (.getAllThreadIds mx))
                 :when ti :let [c (.getThreadCpuTime mx (.getThreadId ti))] :when (pos? c)]
             [(.getThreadId ti) [(.getThreadName ti) c]])))

(defn- kind [^String tname]
  (cond (str/includes? tname "StreamThread") "stream_threads"
        (str/includes? tname "kafka-producer-network-thread") "streams_producer_io"
        (str/includes? tname "herald-flow") "flow_other"
        (re-find #"(?i)data-plane|request-handler|kafka-|raft|controller|broker|Log|replica|group-coordinator|transaction|socket|processor|quorum|metadata|scheduler" tname) "broker"
        :else "other"))

(defn- cpu-by-kind
  "CPU ms per kind of thread between two `thread-cpu` snapshots (threads born meanwhile count from 0)."
  [before after]
  (reduce (fn [m [id [nm c]]]
            (update m (kind nm) (fnil + 0) (quot (- (long c) (long (second (get before id [nm 0])))) 1000000)))
          (sorted-map) after))

(defn- profiler!
  "Runs async-profiler command `cmd` when the system property herald.bench.profiler names its jar's
  libasyncProfiler.so (the jar on the classpath); a no-op otherwise. The event is herald.bench.profile-event
  (cpu by default; wall shows where the stream thread waits)."
  [cmd]
  (when-let [lib (System/getProperty "herald.bench.profiler")]
    (let [p (clojure.lang.Reflector/invokeStaticMethod "one.profiler.AsyncProfiler" "getInstance" (object-array [lib]))]
      (clojure.lang.Reflector/invokeInstanceMethod p "execute" (object-array [cmd])))))

(defn- process-cpu-ns ^long []
  (.getProcessCpuTime ^com.sun.management.OperatingSystemMXBean (ManagementFactory/getOperatingSystemMXBean)))

(defn- run-once
  "Runs the job once under `guarantee` over the preloaded `topic` of `n` segments; returns figures."
  [bootstrap topic n {:keys [serde batch threads guarantee commit-ms config profile]}]
  (.set written 0) (.set first-at 0) (.set all-at 0) (vreset! target n)
  (let [mx (ManagementFactory/getThreadMXBean)
        app (str "bench-" (name guarantee) "-" (System/currentTimeMillis))
        _ (when profile (profiler! (str "start,event=" (System/getProperty "herald.bench.profile-event" "cpu") ",interval=1ms")))
        c0 (thread-cpu mx)
        p0 (process-cpu-ns)
        t0 (System/nanoTime)
        h (flow/submit-job (job serde batch)
                           (cond-> {:runtime :kafka-streams
                                    :inject {:in {:kafka/topic topic}}
                                    :data-dir (ks/temp-dir)
                                    :kafka (cond-> {:bootstrap-servers bootstrap :application-id app
                                                    :processing-guarantee guarantee :threads threads}
                                             (seq config) (assoc :config config))}
                             (pos? commit-ms) (assoc :checkpoint-interval-ms commit-ms)))]
    (try
      (let [ok? (flow/await-caught-up h 120000)
            t1 (System/nanoTime)
            c1 (thread-cpu mx)
            p1 (process-cpu-ns)
            _ (when profile (profiler! (str "stop,collapsed,total,file=" profile)))
            m (flow/job-metrics h)]
        (when-not ok? (throw (ex-info "the benchmark job did not catch up in 120 s" {:metrics m})))
        (when (< (.get written) n) (throw (ex-info "caught up with fewer segments written than produced" {:written (.get written) :n n})))
        (let [secs (/ (- t1 t0) 1e9)
              steady (/ (- (.get all-at) (.get first-at)) 1e9)
              cpu (cpu-by-kind c0 c1)]
          {:sps (/ n secs) :ms (long (* 1000 secs))
           :startup-ms (quot (- (.get first-at) t0) 1000000)
           :steady-sps (if (pos? steady) (/ n steady) 0.0)
           :commit-tail-ms (quot (- t1 (.get all-at)) 1000000)
           :written (.get written)
           :cpu cpu
           :cores-used (/ (- p1 p0) 1e9 secs)
           :cpu-us-per-seg (/ (* 1000.0 (reduce + (vals cpu))) n)
           :commit-rate (get-in m [:kafka :commit-rate])}))
      (finally (flow/kill-job h)))))

(defn- parse-config [s]
  (into {} (for [kv (str/split (or s "") #",") :when (str/includes? kv "=") :let [[k v] (str/split kv #"=" 2)]] [k v])))

(defn -main
  "Args: segments partitions threads guarantees(comma-separated) serde batch(0 = Kafka's default)
  commit-ms(commit.interval.ms, 100 by default for both guarantees; 0 = Kafka's default for the guarantee) extra-config(k=v,... for :kafka :config). Starts the broker,
  preloads one input topic, warms up on a small topic, runs each guarantee once over the same topic (each
  under its own application id, so each reads it all) and prints one `flow runtime=kafka-streams` line
  per guarantee, after `info` lines."
  [& [n-str parts-str threads-str gs-str serde-str batch-str commit-str config-str]]
  (let [n (parse-long (or n-str "1000000")) parts (parse-long (or parts-str "4")) threads (parse-long (or threads-str "2"))
        guarantees (mapv keyword (str/split (or gs-str "exactly-once-v2,at-least-once") #","))
        serde (keyword (or serde-str "codec"))
        batch (let [b (parse-long (or batch-str "0"))] (when (pos? b) b))
        commit-ms (parse-long (or commit-str "100"))
        opts {:serde serde :batch batch :threads threads :commit-ms commit-ms :config (parse-config config-str)}
        t-broker (System/nanoTime)
        bootstrap (or (kb/bootstrap) (throw (ex-info (str "no Kafka broker: " (kb/failure)) {})))
        _ (println (format "info kafka-streams broker=%s started_ms=%d" bootstrap (quot (- (System/nanoTime) t-broker) 1000000)))
        warm (str "bench-warm-" (System/currentTimeMillis))
        topic (str "bench-in-" (System/currentTimeMillis))
        wn (max 1000 (quot n 10))]
    (kb/create-topics! bootstrap [warm topic] parts)
    (preload! bootstrap warm wn serde)
    (println (format "info kafka-streams preload n=%d partitions=%d serde=%s ms=%d" n parts (name serde) (preload! bootstrap topic n serde)))
    (doseq [g guarantees] (run-once bootstrap warm wn (assoc opts :guarantee g)))
    (let [pdir (System/getProperty "herald.bench.profile-dir")
          rs (vec (for [g guarantees]
                    [g (run-once bootstrap topic n (cond-> (assoc opts :guarantee g)
                                                     pdir (assoc :profile (str pdir "/kafka-streams-" (name g) ".collapsed"))))]))
          knobs (format "partitions=%d threads=%d serde=%s batch=%s commit_ms=%s" parts threads (name serde)
                        (or batch "default") (if (pos? commit-ms) commit-ms "default"))]
      (doseq [[g r] rs]
        (println (format "info kafka-streams guarantee=%s n=%d %s total_ms=%d startup_ms=%d steady_sps=%d commit_tail_ms=%d cpu_ms=%s cpu_us_per_segment=%.2f jvm_cores_used=%.2f commit_rate=%.2f loadavg=%.2f"
                         (name g) n knobs (:ms r) (:startup-ms r) (long (:steady-sps r)) (:commit-tail-ms r)
                         (str/join "," (for [[k v] (:cpu r)] (str k ":" v))) (double (:cpu-us-per-seg r)) (double (:cores-used r))
                         (double (or (:commit-rate r) 0.0))
                         (.getSystemLoadAverage (ManagementFactory/getOperatingSystemMXBean)))))
      (doseq [[g r] rs]
        (println (format "flow runtime=kafka-streams sps=%d guarantee=%s %s" (long (:sps r)) (name g) knobs))))
    (shutdown-agents)
    (System/exit 0)))
