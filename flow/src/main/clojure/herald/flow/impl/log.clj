(ns herald.flow.impl.log
  "A durable local log: records (Clojure data, see herald.flow.log.RecordCodec) appended to segment files with
  length and CRC framing, read by offset."
  (:require [clojure.java.io :as io])
  (:import (herald.flow.log RecordCodec)
           (java.io File)
           (java.nio ByteBuffer)
           (java.nio.channels FileChannel)
           (java.nio.file OpenOption StandardOpenOption)
           (java.util.concurrent ConcurrentLinkedQueue)
           (java.util.zip CRC32)))

(set! *warn-on-reflection* true)

(def ^:private ^:const header-bytes 8)

(defn- seg-file ^File [^File dir base] (io/file dir (format "%020d.log" base)))

(defn- seg-bases [^File dir]
  (->> (.listFiles dir) (map #(.getName ^File %)) (keep #(second (re-matches #"(\d{20})\.log" %)))
       (map parse-long) sort vec))

(defn- open-ch ^FileChannel [^File f write?]
  (FileChannel/open (.toPath f) (into-array OpenOption (if write?
                                                         [StandardOpenOption/CREATE StandardOpenOption/WRITE StandardOpenOption/READ]
                                                         [StandardOpenOption/READ]))))

(defn- crc ^long [^bytes b ^long off ^long len] (let [c (CRC32.)] (.update c b (int off) (int len)) (.getValue c)))

(defn- valid-end
  "Byte position in `ch` just past the last whole, CRC-valid record."
  ^long [^FileChannel ch]
  (let [size (.size ch) hdr (ByteBuffer/allocate header-bytes)]
    (loop [pos 0]
      (.clear hdr)
      (if (< (- size pos) header-bytes)
        pos
        (do (.read ch hdr pos) (.flip hdr)
            (let [len (.getInt hdr) c (Integer/toUnsignedLong (.getInt hdr))]
              (if (or (neg? len) (> (+ pos header-bytes len) size))
                pos
                (let [body (ByteBuffer/allocate len)]
                  (.read ch body (+ pos header-bytes))
                  (if (= c (crc (.array body) 0 len)) (recur (+ pos header-bytes (long len))) pos)))))))))

(defrecord Log [^File dir lock state segment-bytes fsync? ^Object signal pending])

(defn open-log
  "Opens (creating) the log in directory `dir`, truncating a torn last record. Options: `:segment-bytes`, `:fsync?`."
  [dir {:keys [segment-bytes fsync?] :or {segment-bytes (* 64 1024 1024) fsync? false}}]
  (let [d (.getCanonicalFile (io/file dir))]
    (.mkdirs d)
    (let [bases (seg-bases d) base (long (or (peek bases) 0))
          ch (open-ch (seg-file d base) true)
          vend (valid-end ch)]
      (.truncate ch vend)
      (.position ch vend)
      (->Log d (Object.) (atom {:ch ch :base base :end (+ base vend)}) (long segment-bytes) (boolean fsync?) (Object.)
             (ConcurrentLinkedQueue.)))))

(defonce ^:private registry (atom {}))

(defn shared-log
  "The log open in this JVM for `dir`, opening it on first use (so appenders and readers share it)."
  [dir opts]
  (let [k (str (.getCanonicalFile (io/file dir)))]
    (locking registry
      (or (get @registry k)
          (let [l (open-log k opts)] (swap! registry assoc k l) l)))))

(defn forget!
  "Removes `log` from the per-JVM registry."
  [^Log log] (swap! registry dissoc (str (:dir log))))

(defn end-offset
  "The offset the next record will get."
  ^long [^Log log]
  (long (:end @(:state log))))

(defn- encode ^bytes [record] (RecordCodec/encode record))

(defn- roll! [^Log log]
  (let [{:keys [^FileChannel ch end]} @(:state log)]
    (when (:fsync? log) (.force ch true))
    (.close ch)
    (swap! (:state log) assoc :ch (open-ch (seg-file (:dir log) end) true) :base end)))

(defn- frame!
  "Writes the length, CRC and body of each of `bodies` into `buf`."
  [^ByteBuffer buf bodies]
  (doseq [^bytes b bodies]
    (.putInt buf (alength b)) (.putInt buf (unchecked-int (crc b 0 (alength b)))) (.put buf b)))

(defn- write-pending!
  "Writes every queued append in one write (group commit); called with the log's lock held."
  [^Log log]
  (let [^ConcurrentLinkedQueue q (:pending log)
        entries (loop [acc []] (if-let [e (.poll q)] (recur (conj acc e)) acc))
        bodies (mapcat #(aget ^objects % 0) entries)
        total (long (reduce + 0 (map #(+ header-bytes (alength ^bytes %)) bodies)))]
    (when (seq entries)
      (when (>= (- (long (:end @(:state log))) (long (:base @(:state log)))) (long (:segment-bytes log)))
        (roll! log))
      (let [{:keys [^FileChannel ch end]} @(:state log)
            buf (ByteBuffer/allocate total)]
        (frame! buf bodies)
        (.flip buf)
        (while (.hasRemaining buf) (.write ch buf))
        (when (:fsync? log) (.force ch false))
        (swap! (:state log) assoc :end (+ (long end) total))
        (reduce (fn [^long pos ^objects e]
                  (let [[offs pos] (reduce (fn [[offs ^long pos] ^bytes b] [(conj offs pos) (+ pos header-bytes (alength b))])
                                           [[] pos] (aget e 0))]
                    (aset e 1 offs)
                    pos))
                (long end) entries)
        (let [^Object sig (:signal log)] (locking sig (.notifyAll sig)))))))

(defn append-all!
  "Appends `records` contiguously; returns their offsets. Concurrent appends are written together in one
  write (and one fsync). Visible to readers once this returns; durable against a process crash at once,
  against power loss when the log was opened with `:fsync? true`."
  [^Log log records]
  (let [entry (object-array [(mapv encode records) nil])]
    (.add ^ConcurrentLinkedQueue (:pending log) entry)
    (locking (:lock log)
      (when (nil? (aget entry 1)) (write-pending! log)))
    (aget entry 1)))

(defn await-append
  "Waits up to `ms` for an append to `log` in this JVM (appends from other processes are not signalled)."
  [^Log log ^long ms]
  (when (pos? ms)
    (let [^Object sig (:signal log)] (locking sig (.wait sig ms)))))

(defn append!
  "Appends one record; returns its offset."
  ^long [log record]
  (first (append-all! log [record])))

(defn close-log!
  "Forces the log to disk, closes it and removes it from the registry."
  [^Log log]
  (forget! log)
  (locking (:lock log) (let [^FileChannel ch (:ch @(:state log))] (.force ch true) (.close ch))))

(defn delete-before!
  "Deletes the segment files whose records all lie before `offset`; returns how many."
  [^Log log ^long offset]
  (locking (:lock log)
    (let [bases (seg-bases (:dir log))
          dead (map first (filter (fn [[_ next-base]] (<= (long next-base) offset)) (partition 2 1 bases)))]
      (doseq [b dead] (.delete (seg-file (:dir log) (long b))))
      (count dead))))

;; ---- reading

(defrecord Reader [^File dir state])

(defn- open-at [^File dir ^long pos]
  (let [base (long (or (last (filter #(<= (long %) pos) (seg-bases dir))) 0))
        ch (open-ch (seg-file dir base) false)]
    (.position ch (- pos base))
    {:ch ch :base base :pos pos :buf (doto (ByteBuffer/allocate 65536) (.limit 0))}))

(defn reader
  "A reader of the log in `dir` starting at byte offset `pos` (0 is the start)."
  [dir ^long pos]
  (let [d (.getCanonicalFile (io/file dir))]
    (.mkdirs d)
    (->Reader d (atom (open-at d pos)))))

(defn position
  "The offset of the next record the reader will return."
  ^long [^Reader r] (long (:pos @(:state r))))

(defn seek!
  "Moves the reader to byte offset `pos` (a record boundary)."
  [^Reader r ^long pos]
  (.close ^FileChannel (:ch @(:state r)))
  (reset! (:state r) (open-at (:dir r) pos)))

(defn- fill!
  "Reads more bytes into the buffer so that at least `need` are available; false when the file has no more."
  [^Reader r ^long need]
  (let [{:keys [^FileChannel ch ^ByteBuffer buf]} @(:state r)]
    (when (> need (.capacity buf))
      (let [bigger (ByteBuffer/allocate (int (max need (* 2 (.capacity buf)))))]
        (.put bigger buf) (.flip bigger)
        (swap! (:state r) assoc :buf bigger)))
    (let [^ByteBuffer buf (:buf @(:state r))]
      (.compact buf)
      (.read ch buf)
      (.flip buf)
      (>= (.remaining buf) need))))

(defn- next-segment! [^Reader r]
  (let [{:keys [^FileChannel ch pos ^ByteBuffer buf]} @(:state r)]
    (when (and (zero? (.remaining buf)) (.exists (seg-file (:dir r) (long pos))) (not= (long pos) (long (:base @(:state r)))))
      (.close ch)
      (reset! (:state r) (open-at (:dir r) pos))
      true)))

(defn- read-one
  "The next record or ::none when no whole record is available yet."
  [^Reader r]
  (let [^ByteBuffer buf (:buf @(:state r))]
    (if (or (>= (.remaining buf) header-bytes) (fill! r header-bytes) (and (next-segment! r) (fill! r header-bytes)))
      (let [^ByteBuffer buf (:buf @(:state r))
            len (long (.getInt buf (.position buf)))
            need (+ header-bytes len)]
        (if (and (<= 0 len (* 256 1024 1024)) (or (>= (.remaining buf) need) (fill! r need)))
          (let [^ByteBuffer buf (:buf @(:state r))
                c (Integer/toUnsignedLong (.getInt buf (int (+ (.position buf) 4))))
                body (byte-array len)]
            (.position buf (int (+ (.position buf) header-bytes)))
            (.get buf body)
            (if (= c (crc body 0 len))
              (do (swap! (:state r) update :pos + need)
                  (RecordCodec/decode body))
              (let [{:keys [^FileChannel ch ^long pos base]} @(:state r)]
                (.position buf (int (- (.position buf) need)))
                (when (> (.size ch) (+ (- pos (long base)) need))
                  ;; a whole record with a bad CRC and more data after it: corruption, not a write in progress
                  (throw (ex-info (str "Corrupt record at offset " pos " in log " (:dir r))
                                  {:type :herald.flow/corrupt-log :dir (str (:dir r)) :offset pos})))
                ::none)))
          ::none))
      ::none)))

(defn read-batch
  "Up to `max-n` records from the reader's position (fewer, maybe none, when the log has no more yet)."
  [^Reader r ^long max-n]
  (loop [out (transient [])]
    (if (>= (count out) max-n)
      (persistent! out)
      (let [x (read-one r)]
        (if (identical? x ::none) (persistent! out) (recur (conj! out x)))))))

(defn close-reader!
  "Closes the reader's file."
  [^Reader r] (.close ^FileChannel (:ch @(:state r))))
