(ns herald.flow.kafka.topology
  "A validated job as a Kafka Streams Topology (Processor API): inputs are source topics, tasks processors, groups repartition topics, windows state stores, outputs sink topics."
  (:require [herald.flow.impl.route :as route]
            [herald.flow.kafka.output :as output]
            [herald.flow.kafka.processor :as processor]
            [herald.flow.kafka.serde :as serde]
            [herald.flow.kafka.window :as window])
  (:import (org.apache.kafka.common.serialization Serde)
           (org.apache.kafka.streams AutoOffsetReset Topology)
           (org.apache.kafka.streams.processor.api ProcessorSupplier)
           (org.apache.kafka.streams.state StoreBuilder)))

(set! *warn-on-reflection* true)

(defn- safe [n] (.replaceAll (subs (str n) 1) "[^a-zA-Z0-9._-]" "_"))
(defn- proc-node [n] (str "task." (safe n)))
(defn- source-node [n] (str "input." (safe n)))
(defn- output-node [n] (str "output." (safe n)))
(defn- plugin-node [n src] (str "output." (safe n) ".from." (safe src)))
(defn- topic? [t] (some? (:kafka/topic t)))
(defn- to-node [n] (str "repartition-to." (safe n)))
(defn- from-node [n] (str "repartition-from." (safe n)))

(defn repartition-topic
  "The internal topic that regroups the segments reaching task `n` of application `app-id`."
  [app-id n]
  (str app-id "-" (safe n) "-repartition"))

(defn repartitioned?
  "Whether task map `task` reads a repartition topic: it is grouped (its segments are keyed by group and
  partitioned by it) or windowed (one partition per group, so a window sees every segment of a group)."
  [job task]
  (and (#{:function :reduce} (:task/type task))
       (boolean (or (:task/group-by-key task) (:task/group-by-fn task)
                    (some #(= (:task/name task) (:window/task %)) (:windows job))))))

(defn- topological [job]
  (let [names (mapv :task/name (:catalog job))
        ins (reduce (fn [m [a b]] (update m b (fnil conj []) a)) {} (:workflow job))]
    (loop [order [] seen #{} left names]
      (if (empty? left)
        order
        (let [ready (filter #(every? seen (ins %)) left)]
          (recur (into order ready) (into seen ready) (remove (set ready) left)))))))

(defn- targets [job n] (vec (keep (fn [[a b]] (when (= a n) b)) (:workflow job))))
(defn- sources [job n] (vec (keep (fn [[a b]] (when (= b n) a)) (:workflow job))))

(defn- child
  "[node key-fn] through which task `src` reaches target task map `t`."
  [job src t resolve]
  (cond (and (= :output (:task/type t)) (topic? t)) [(output-node (:task/name t)) (route/group-fn t resolve)]
        (= :output (:task/type t)) [(plugin-node (:task/name t) src) nil]
        (repartitioned? job t) (let [g (or (route/group-fn t resolve) (constantly nil))]
                                 ;; wrapped, so that a nil group is a key too and lands on one partition
                                 [(to-node (:task/name t)) (fn [seg] [(g seg)])])
        :else [(proc-node (:task/name t)) nil]))

(defn build
  "{:topology Topology :repartition-topics [{:topic :partitions :task}] :inputs {task topic} :outputs {task topic}}
  for validated `job`, plus `:plugin-outputs` (the output tasks that run their plugin). `env`: `:app-id`,
  `:resolve`, `:on-error`, `:metrics`, `:lifecycles`, `:store`, `:retry-states`, `:error-states`, `:stop?` (a fn:
  true once the application closes, when retries stop)."
  [job {:keys [app-id resolve store] :as env}]
  (let [tasks (into {} (map (juxt :task/name identity)) (:catalog job))
        order (topological job)
        topo (Topology.)
        rp (filter #(repartitioned? job (tasks %)) order)]
    (doseq [n order :let [t (tasks n)] :when (= :input (:task/type t))]
      (if-let [from (:kafka/start-from t)]
        (.addSource topo ^AutoOffsetReset (if (= :latest from) (AutoOffsetReset/latest) (AutoOffsetReset/earliest))
                    ^String (source-node n) (.deserializer ^Serde serde/ignored-key)
                    (.deserializer (serde/topic-serde t)) ^"[Ljava.lang.String;" (into-array String [(:kafka/topic t)]))
        (.addSource topo ^String (source-node n) (.deserializer ^Serde serde/ignored-key)
                    (.deserializer (serde/topic-serde t)) ^"[Ljava.lang.String;" (into-array String [(:kafka/topic t)]))))
    (doseq [n rp]
      (.addSource topo ^String (from-node n) (.deserializer ^Serde serde/group) (.deserializer ^Serde serde/codec)
                  ^"[Ljava.lang.String;" (into-array String [(repartition-topic app-id n)])))
    (doseq [n order :let [t (tasks n)] :when (not= :output (:task/type t))]
      (let [ts (targets job n)
            cs (mapv #(child job n (tasks %) resolve) ts)
            parents (cond (= :input (:task/type t)) [(source-node n)]
                          (repartitioned? job t) [(from-node n)]
                          :else (mapv proc-node (sources job n)))]
        (.addProcessor topo ^String (proc-node n)
                       ^ProcessorSupplier (processor/supplier (assoc (select-keys env [:resolve :on-error :metrics :lifecycles :error-states :stop?])
                                                                     :job job :task t :targets ts
                                                                     :sink-tasks (set (for [[m x] tasks :when (and (= :output (:task/type x)) (topic? x))] m))
                                                                     :children (mapv first cs) :key-fns (mapv second cs)))
                       ^"[Ljava.lang.String;" (into-array String parents))
        (doseq [^StoreBuilder b (window/store-builders job n store)]
          (.addStateStore topo b ^"[Ljava.lang.String;" (into-array String [(proc-node n)])))))
    (doseq [n order :let [t (tasks n)] :when (and (= :output (:task/type t)) (not (topic? t))) src (sources job n)
            :let [store (output/store-name (safe n) (safe src))]]
      (.addProcessor topo ^String (plugin-node n src)
                     ^ProcessorSupplier (output/supplier (assoc (select-keys env [:resolve :metrics :retry-states :on-error :stop?]) :job job :task t :store store))
                     ^"[Ljava.lang.String;" (into-array String [(proc-node src)]))
      (.addStateStore topo (output/store-builder store) ^"[Ljava.lang.String;" (into-array String [(plugin-node n src)])))
    (doseq [n order :let [t (tasks n)] :when (and (= :output (:task/type t)) (topic? t))]
      (.addSink topo ^String (output-node n) ^String (:kafka/topic t) (.serializer ^Serde serde/output-key)
                (.serializer (serde/topic-serde t)) ^"[Ljava.lang.String;" (into-array String (mapv proc-node (sources job n)))))
    (doseq [n rp]
      (.addSink topo ^String (to-node n) ^String (repartition-topic app-id n) (.serializer ^Serde serde/group)
                (.serializer ^Serde serde/codec) ^"[Ljava.lang.String;" (into-array String (mapv proc-node (sources job n)))))
    {:topology topo
     :repartition-topics (vec (for [n rp] {:topic (repartition-topic app-id n) :partitions (:task/parallelism (tasks n) 1) :task n}))
     :inputs (into {} (for [[n t] tasks :when (= :input (:task/type t))] [n (:kafka/topic t)]))
     :outputs (into {} (for [[n t] tasks :when (and (= :output (:task/type t)) (topic? t))] [n (:kafka/topic t)]))
     :plugin-outputs (set (for [[n t] tasks :when (and (= :output (:task/type t)) (not (topic? t)))] n))}))
