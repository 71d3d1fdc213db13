(ns herald.flow.log-test
  "The durable local log: append and read back, segment files, torn tails, seek, retention, and the log input."
  (:require [clojure.java.io :as io]
            [clojure.test :refer [deftest is testing]]
            [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [herald.flow :as flow]
            [herald.flow.impl.log :as log])
  (:import (herald.flow.log RecordCodec)
           (java.io File RandomAccessFile)
           (java.nio.file Files)
           (java.nio.file.attribute FileAttribute)))

(set! *warn-on-reflection* true)

(defonce ^:private temp-dirs
  (let [dirs (atom [])]
    (.addShutdownHook (Runtime/getRuntime)
                      (Thread. ^Runnable (fn [] (doseq [^File d @dirs]
                                                  (doseq [^File f (reverse (file-seq d))] (.delete f))))))
    dirs))

(defn temp-dir
  "A new temporary directory, deleted with its contents when the JVM exits."
  ^File [prefix]
  (let [d (.toFile (Files/createTempDirectory prefix (make-array FileAttribute 0)))]
    (swap! temp-dirs conj d)
    d))

(defn- read-all [dir from]
  (let [r (log/reader dir from)]
    (try (loop [acc []] (let [b (log/read-batch r 100)] (if (seq b) (recur (into acc b)) acc)))
         (finally (log/close-reader! r)))))

(deftest append-and-read-across-segments
  (let [dir (temp-dir "herald-log")
        l (log/open-log dir {:segment-bytes 1000})
        recs (for [i (range 500)] {:id i :body (apply str (repeat (mod i 13) "x")) :at #inst "2026-11-22T10:00:00Z"})
        offs (doall (for [batch (partition-all 7 recs)] (log/append-all! l batch)))]
    (is (apply < (apply concat offs)) "offsets grow")
    (is (> (count (.listFiles dir)) 5) "the log rolled to several segment files")
    (is (= recs (read-all dir 0)))
    (testing "reading from an offset starts at that record"
      (let [off (nth (apply concat offs) 123)]
        (is (= (drop 123 recs) (read-all dir off)))))
    (testing "delete-before drops whole files only"
      (let [off (nth (apply concat offs) 300)]
        (is (pos? (log/delete-before! l off)))
        (is (= (drop 300 recs) (read-all dir off)))))
    (log/close-log! l)))

(deftest a-torn-tail-is-truncated-on-open
  (let [dir (temp-dir "herald-log")
        l (log/open-log dir {})]
    (log/append-all! l [{:a 1} {:a 2}])
    (log/close-log! l)
    (let [f (first (.listFiles dir))]
      (with-open [raf (RandomAccessFile. ^File f "rw")]
        (.seek raf (.length raf))
        (.write raf (byte-array [0 0 0 50 1 2 3]))))
    (let [l (log/open-log dir {})]
      (is (= [{:a 1} {:a 2}] (read-all dir 0)) "readers never see the torn record")
      (log/append! l {:a 3})
      (is (= [{:a 1} {:a 2} {:a 3}] (read-all dir 0)) "appends continue after the last whole record")
      (log/close-log! l))))

(deftest a-reader-waits-for-whole-records
  (let [dir (temp-dir "herald-log")
        l (log/open-log dir {})
        r (log/reader dir 0)]
    (is (= [] (log/read-batch r 10)))
    (log/append! l {:x 1})
    (is (= [{:x 1}] (log/read-batch r 10)))
    (is (= (log/end-offset l) (log/position r)))
    (log/close-reader! r)
    (log/close-log! l)))

(deftest log-input-feeds-a-running-job
  (let [dir (str (temp-dir "herald-log"))
        l (flow/open-log dir)
        out (atom [])
        _ (flow/append-all! l [{:n 1} {:n 2}])
        h (flow/submit-job {:workflow [[:in :out]]
                            :catalog [{:task/name :in :task/type :input :task/plugin :herald.flow.plugin/log-input :log/dir dir}
                                      {:task/name :out :task/type :output :task/plugin :herald.flow.plugin/collecting-output}]}
                           {:inject {:out {:sink/atom out}}})]
    (flow/append-all! l [{:n 3}])
    (let [deadline (+ (System/currentTimeMillis) 60000)]
      (while (and (< (count @out) 3) (< (System/currentTimeMillis) deadline)) (Thread/sleep 5)))
    (is (= [{:n 1} {:n 2} {:n 3}] @out))
    (is (identical? l (flow/open-log dir)) "one log per directory in a JVM")
    (flow/kill-job h)
    (flow/close-log! l)))

(defspec the-codec-round-trips-any-data 300
  (prop/for-all [x gen/any-equatable]
    (= x (RecordCodec/decode (RecordCodec/encode x)))))

(defrecord Req [entity ms])

(deftest the-codec-keeps-types-that-matter
  (let [x {:at #inst "2026-11-22T10:00:00.123Z" :id #uuid "4fe6b1a0-4d5c-4a1c-9b6e-1d2f3a4b5c6d"
           :ratio 1/3 :big 12345678901234567890N :dec 1.5M :ch \x :sym 'a/b :tag (tagged-literal 'my/tag [1])
           :nested [{:a #{1 2}} '(3 4) nil true false -0.5 "ünïcødé ✓"]}
        y (RecordCodec/decode (RecordCodec/encode x))]
    (is (= x y))
    (is (instance? java.util.Date (:at y)))
    (is (vector? (:nested y)))
    (is (= {:entity :inbound :ms 3} (RecordCodec/decode (RecordCodec/encode (->Req :inbound 3)))) "records come back as maps"))
  (testing "a byte array comes back as the same bytes (it came back as an #object tagged literal before)"
    (let [b (byte-array (map unchecked-byte (range -128 128)))
          y (RecordCodec/decode (RecordCodec/encode {:data b :empty (byte-array 0)}))]
      (is (bytes? (:data y)))
      (is (java.util.Arrays/equals ^bytes b ^bytes (:data y)))
      (is (= 0 (alength ^bytes (:empty y))))))
  (testing "EDN text payloads (the log's first format) still read"
    (is (= {:a [1 2]} (RecordCodec/decode (.getBytes "{:a [1 2]}" "UTF-8"))))))

(deftest corruption-in-the-middle-is-an-error-not-a-stall
  (let [dir (temp-dir "herald-log")
        l (log/open-log dir {})]
    (log/append-all! l [{:a 1} {:a 2} {:a 3}])
    (let [f (first (.listFiles dir))
          second-record (log/append! l {:a 4})]
      (with-open [raf (RandomAccessFile. ^File f "rw")]
        (.seek raf (- second-record 2))
        (.write raf (byte-array [7]))))
    (let [r (log/reader dir 0)]
      (is (= [{:a 1} {:a 2}] (log/read-batch r 2)))
      (is (= :herald.flow/corrupt-log (try (log/read-batch r 10) nil (catch clojure.lang.ExceptionInfo e (:type (ex-data e))))))
      (log/close-reader! r))
    (log/close-log! l)))

(deftest concurrent-appenders-are-grouped-and-keep-their-records-whole
  (let [dir (temp-dir "herald-log")
        l (log/open-log dir {:segment-bytes 4096})
        offsets (->> (range 8)
                     (mapv (fn [t] (future (vec (for [i (range 250)] [(log/append-all! l [{:t t :i i} {:t t :i i :second true}]) t i])))))
                     (mapcat deref))
        recs (read-all dir 0)]
    (is (= 4000 (count recs)))
    (is (= (count (distinct (mapcat first offsets))) 4000) "every record got its own offset")
    (testing "a call's records are contiguous and each thread's calls are in its order"
      (doseq [[t rs] (group-by :t recs)]
        (is (= (for [i (range 250) s [nil true]] (cond-> {:t t :i i} s (assoc :second true))) rs))))
    (log/close-log! l)))
