(ns herald.feed.jobs.minutes
  "Closed per-minute figures on disk: one append-only file of EDN lines per UTC day, each line one minute of one entity x operation with its HdrHistogram (compressed, base64), read back on start."
  (:require [clojure.edn :as edn]
            [clojure.java.io :as io]
            [clojure.string :as str])
  (:import (java.io BufferedReader File RandomAccessFile Writer)
           (java.nio ByteBuffer)
           (java.time Instant LocalDate ZoneOffset)
           (java.util Base64)
           (org.HdrHistogram AbstractHistogram Histogram)))

(set! *warn-on-reflection* true)

;; A row is {:run "id" :minute epoch-minute :entity kw :operation kw :statuses {status n} :histogram h}.
;; :run names the process that wrote it: a minute written by two runs (a restart within it) is the sum of
;; both; the same run writing a minute twice (never expected) keeps the last. Lines are written with
;; write(2) and no fsync, like the store's default: they survive a crash of the process, not a power loss.

(defn- day-of ^LocalDate [^long minute]
  (.toLocalDate (.atOffset (Instant/ofEpochSecond (* minute 60)) ZoneOffset/UTC)))

(defn- file-day
  "The day of a minutes file name (minutes-2026-11-22.edn), or nil."
  [^File f]
  (when-let [[_ d] (re-matches #"minutes-(\d{4}-\d{2}-\d{2})\.edn" (.getName f))]
    (LocalDate/parse d)))

(defn encode-histogram
  "`h` in HdrHistogram's compressed encoding, as base64 text (also the form request batches and minute rows
  take on Kafka)."
  ^String [^AbstractHistogram h]
  (let [buf (ByteBuffer/allocate (.getNeededByteBufferCapacity h))
        n (.encodeIntoCompressedByteBuffer h buf)]
    (.encodeToString (Base64/getEncoder) (java.util.Arrays/copyOf (.array buf) n))))

(defn decode-histogram
  "The Histogram `encode-histogram` wrote."
  ^Histogram [^String s]
  (Histogram/decodeFromCompressedByteBuffer (ByteBuffer/wrap (.decode (Base64/getDecoder) s)) 0))

(defn- line ^String [{:keys [run minute entity operation statuses histogram]}]
  (pr-str {:run run :minute minute :entity entity :operation operation :statuses statuses
           :histogram (encode-histogram histogram)}))

(defn- read-line* [^String s]
  (try (let [m (edn/read-string s)]
         (when (and (map? m) (integer? (:minute m)) (keyword? (:entity m)) (keyword? (:operation m))
                    (string? (:histogram m)) (map? (:statuses m)))
           (assoc m :histogram (decode-histogram (:histogram m)))))
       (catch Exception _ nil)))

(defn- files [dir]
  (sort-by #(.getName ^File %) (filter file-day (.listFiles (io/file dir)))))

(defn prune!
  "Deletes the day files of `dir` that only hold minutes before `oldest-minute`; returns how many went."
  [dir ^long oldest-minute]
  (let [oldest-day (day-of oldest-minute)
        old (filter #(.isBefore ^LocalDate (file-day %) oldest-day) (files dir))]
    (doseq [^File f old] (.delete f))
    (count old)))

(defn load-rows
  "The rows stored in `dir` from `oldest-minute` on: a vector of rows, one per (run, minute, entity,
  operation), the last written winning. Lines that cannot be read (a torn last line after a crash) are
  skipped and counted in the result's metadata {:skipped n}."
  [dir ^long oldest-minute]
  (let [skipped (volatile! 0)
        rows (volatile! {})]
    (doseq [^File f (files dir)
            :when (not (.isBefore ^LocalDate (file-day f) (day-of oldest-minute)))]
      (with-open [r (io/reader f)]
        (doseq [s (line-seq ^BufferedReader r) :when (not (str/blank? s))]
          (if-let [row (read-line* s)]
            (when (>= (long (:minute row)) oldest-minute)
              (vswap! rows assoc ((juxt :run :minute :entity :operation) row) row))
            (vswap! skipped inc)))))
    (with-meta (vec (vals @rows)) {:skipped @skipped})))

(defn- torn?
  "True when `f` does not end with a newline (a crash cut its last line short)."
  [^File f]
  (and (pos? (.length f))
       (with-open [raf (RandomAccessFile. f "r")]
         (.seek raf (dec (.length f)))
         (not= 10 (.read raf)))))

(defn append!
  "Appends `rows` to the day files of `dir` (created when missing), one line each, and flushes. A torn
  last line is closed first, so it stays the only line lost."
  [dir rows]
  (.mkdirs (io/file dir))
  (doseq [[day rs] (group-by #(day-of (:minute %)) rows)
          :let [f (io/file dir (str "minutes-" day ".edn"))]]
    (with-open [^Writer w (io/writer f :append true)]
      (when (torn? f) (.write w "\n"))
      (doseq [r rs] (.write w (line r)) (.write w "\n")))))
