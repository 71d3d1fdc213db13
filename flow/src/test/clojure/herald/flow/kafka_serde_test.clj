(ns herald.flow.kafka-serde-test
  "The window state serde of the :kafka-streams runtime: Clojure data with HdrHistograms and HashMaps round-trips in the compact encoding, anything else by Java serialization, and state written by Java serialization still reads."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.flow.kafka.serde :as serde])
  (:import (java.io ByteArrayOutputStream ObjectOutputStream)
           (java.util HashMap)
           (org.apache.kafka.common.serialization Serde)
           (org.HdrHistogram Histogram)))

(set! *warn-on-reflection* true)

(defn- enc ^bytes [x] (.serialize (.serializer ^Serde serde/state) "t" x))
(defn- dec* [^bytes b] (.deserialize (.deserializer ^Serde serde/state) "t" b))

(defn- java-bytes ^bytes [x]
  (let [bo (ByteArrayOutputStream.)] (with-open [o (ObjectOutputStream. bo)] (.writeObject o x)) (.toByteArray bo)))

(defn- extent
  "A window extent as the per-minute job keeps it: an auto-resizing histogram and counts in HashMaps."
  []
  (let [h (Histogram. 3)]
    (doseq [v (range 1 5000 7)] (.recordValue h (long (* v v))))
    {:lower 60000 :upper 120000 :group [[:outbound :post]] :dirty 3 :counts [0 2]
     :state {:histogram h :statuses (doto (HashMap.) (.put 200 41) (.put 503 1)) :sources (HashMap.)}}))

(deftest extents-round-trip-compactly
  (let [e (extent) b (enc e) back (dec* b)
        ^Histogram h (get-in e [:state :histogram]) ^Histogram h2 (get-in back [:state :histogram])]
    (is (= (dissoc e :state) (dissoc back :state)))
    (is (= h h2) "the same counts, range and precision")
    (is (= (.getTotalCount h) (.getTotalCount h2)))
    (is (= (.getValueAtPercentile h 99.0) (.getValueAtPercentile h2 99.0)))
    (is (instance? HashMap (get-in back [:state :statuses])))
    (is (= {200 41 503 1} (into {} (get-in back [:state :statuses]))))
    (is (.isAutoResize h2) "a decoded histogram still grows")
    (.recordValue h2 (* 1000 1000 1000 1000))
    (is (< (alength b) (quot (alength (java-bytes e)) 2)) "less than half of Java serialization")))

(deftest other-values-fall-back-to-java-serialization
  (testing "a sorted map, a record-like Java object: read back as they were"
    (let [v {:state (sorted-map 2 :b 1 :a) :when (java.util.Date. 5) :list (java.util.ArrayList. [1 2])}
          back (dec* (enc v))]
      (is (= v back))
      (is (sorted? (:state back)))
      (is (instance? java.util.ArrayList (:list back)))))
  (testing "state written by Java serialization (stores of earlier versions) still reads"
    (let [e (extent) back (dec* (java-bytes e))]
      (is (= (get-in e [:state :histogram]) (get-in back [:state :histogram])))))
  (testing "nil"
    (is (nil? (enc nil)))
    (is (nil? (dec* nil)))))
