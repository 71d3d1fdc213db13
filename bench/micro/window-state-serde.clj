;; bench/micro/window-state-serde.clj: one per-minute window extent (an HdrHistogram of 2,000 durations, statuses,
;; sources) through herald.flow.kafka.serde/state and through Java serialization: bytes, and microseconds per write+read.
;; Run: java -cp feed/target/herald-feed.jar clojure.main -e '(load-file "bench/micro/window-state-serde.clj")'
(require '[herald.flow.kafka.serde :as serde])
(import '(org.HdrHistogram Histogram) '(java.util HashMap) '(java.io ByteArrayOutputStream ObjectOutputStream ByteArrayInputStream ObjectInputStream)
        '(org.apache.kafka.common.serialization Serde))
(defn extent []
  (let [h (Histogram. 3) r (java.util.Random. 1)]
    (dotimes [_ 2000] (.recordValue h (+ 200 (long (* 20000 (Math/abs (.nextGaussian r)))))))
    {:lower 60000 :upper 120000 :group [[:outbound :post]] :dirty 3 :counts [0 2]
     :state {:histogram h :statuses (doto (HashMap.) (.put 200 1990) (.put 503 10)) :sources (doto (HashMap.) (.put "i1" 7))}}))
(defn java-bytes ^bytes [x] (let [bo (ByteArrayOutputStream.)] (with-open [o (ObjectOutputStream. bo)] (.writeObject o x)) (.toByteArray bo)))
(defn java-obj [^bytes b] (with-open [i (ObjectInputStream. (ByteArrayInputStream. b))] (.readObject i)))
(def ser (.serializer ^Serde serde/state)) (def de (.deserializer ^Serde serde/state))
(defn compact-rt [e] (.deserialize de "t" (.serialize ser "t" e)))
(defn java-rt [e] (java-obj (java-bytes e)))
(defn bench [label f e n]
  (dotimes [_ n] (f e))
  (let [t0 (System/nanoTime)] (dotimes [_ n] (f e)) (printf "%s: %.1f us per write+read%n" label (/ (- (System/nanoTime) t0) 1e3 n))))
(let [e (extent)]
  (printf "bytes: java %d, compact %d%n" (alength (java-bytes e)) (alength ^bytes (.serialize ser "t" e)))
  (dotimes [_ 3] (bench "java" java-rt e 20000) (bench "compact" compact-rt e 20000)))
(flush)
