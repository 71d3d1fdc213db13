(ns herald.flow.impl.snapshot
  "Snapshots in the data directory: one file per completed epoch, written atomically, the newest two kept."
  (:require [clojure.java.io :as io])
  (:import (java.io ByteArrayInputStream ByteArrayOutputStream File ObjectInputStream ObjectOutputStream)
           (java.nio.file Files StandardCopyOption CopyOption)
           (java.nio.channels FileChannel)
           (java.nio.file OpenOption StandardOpenOption)))

(set! *warn-on-reflection* true)

(defn serialize
  "Java serialization of `x` (Clojure data, HdrHistogram histograms and any Serializable state)."
  ^bytes [x]
  (let [bo (ByteArrayOutputStream.)]
    (with-open [o (ObjectOutputStream. bo)] (.writeObject o x))
    (.toByteArray bo)))

(defn deserialize
  "The value `serialize` turned into `b`."
  [^bytes b]
  (with-open [i (ObjectInputStream. (ByteArrayInputStream. b))] (.readObject i)))

(defn- snap-dir ^File [data-dir] (io/file data-dir "snapshots"))

(defn- epochs [data-dir]
  (->> (.listFiles (snap-dir data-dir))
       (keep #(some-> (re-matches #"epoch-(\d+)\.snap" (.getName ^File %)) second parse-long))
       sort))

(defn- fsync! [^File f]
  (try (with-open [ch (FileChannel/open (.toPath f) (into-array OpenOption [StandardOpenOption/READ]))] (.force ch true))
       (catch java.io.IOException _ nil)))

(defn write!
  "Writes snapshot `m` (with :epoch) to `data-dir` atomically and durably; deletes all but the newest two."
  [data-dir m]
  (let [d (doto (snap-dir data-dir) (.mkdirs))
        tmp (io/file d (str "epoch-" (:epoch m) ".tmp"))
        dst (io/file d (str "epoch-" (:epoch m) ".snap"))]
    (io/copy (serialize m) tmp)
    (fsync! tmp)
    (Files/move (.toPath tmp) (.toPath dst) (into-array CopyOption [StandardCopyOption/ATOMIC_MOVE]))
    (fsync! d)
    (doseq [e (drop-last 2 (epochs data-dir))] (.delete (io/file d (str "epoch-" e ".snap"))))
    (doseq [^File f (.listFiles d) :when (and (.endsWith (.getName f) ".tmp") (not= f tmp))] (.delete f))
    dst))

(defn latest
  "The newest readable snapshot in `data-dir`, or nil."
  [data-dir]
  (some (fn [e] (try (deserialize (Files/readAllBytes (.toPath (io/file (snap-dir data-dir) (str "epoch-" e ".snap")))))
                     (catch Exception _ nil)))
        (reverse (epochs data-dir))))

(defn lock!
  "Locks `data-dir` for one running job (a file lock, so across processes too); returns the lock to release."
  [data-dir]
  (let [d (doto (io/file data-dir) (.mkdirs))
        ch (FileChannel/open (.toPath (io/file d "job.lock"))
                             (into-array OpenOption [StandardOpenOption/CREATE StandardOpenOption/WRITE]))
        l (try (.tryLock ch) (catch java.nio.channels.OverlappingFileLockException _ nil))]
    (when-not l
      (.close ch)
      (throw (ex-info (str "Data directory " d " is in use by another running job")
                      {:type :herald.flow/data-dir-in-use :data-dir (str d)})))
    ch))

(defn unlock!
  "Releases a lock `lock!` returned."
  [^FileChannel ch]
  (when (.isOpen ch) (.close ch)))
