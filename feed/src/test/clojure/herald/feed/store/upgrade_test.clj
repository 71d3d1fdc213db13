(ns herald.feed.store.upgrade-test
  "Search indexes written by other builds (old field layout, other format versions, unreadable) and index failures."
  (:require [clojure.java.io :as io]
            [clojure.test :refer [deftest is testing]]
            [herald.feed.store :as s]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.search :as search]
            [herald.feed.store.contract :refer [post-of thrown-type]]
            [herald.feed.store.embedded]
            [herald.feed.store.embedded.codec :as c]
            [herald.feed.store.embedded.lucene :as lucene]
            [herald.feed.store.embedded.rocks :as rocks]
            [herald.feed.store.fixtures :as fx]
            [herald.feed.store.text :as text])
  (:import (java.nio.file Paths)
           (java.util HashMap)
           (org.apache.lucene.document Document Field$Store NumericDocValuesField StoredField StringField TextField)
           (org.apache.lucene.index IndexWriter IndexWriterConfig IndexWriterConfig$OpenMode)
           (org.apache.lucene.search Sort SortField SortField$Type)
           (org.apache.lucene.store FSDirectory)))

(set! *warn-on-reflection* true)

(defn- open [dir & {:as opts}]
  (s/open-store (merge {:type :embedded :data-dir dir :block-cache-mb 8 :write-buffer-mb 4 :index-ram-mb 16
                        :search-max-lag-ms 0}
                       opts)))

(defn- eventually
  "Polls (f) every 20 ms until it is truthy or timeout-ms passed; returns its last value."
  [timeout-ms f]
  (let [end (+ (System/currentTimeMillis) (long timeout-ms))]
    (loop []
      (or (f) (if (< (System/currentTimeMillis) end) (do (Thread/sleep 20) (recur)) (f))))))

(defn- populate!
  "Writes two participants and three posts (each with the word \"upgrade\") into a fresh store in dir;
  returns [ann bob]."
  [dir]
  (let [st (open dir)]
    (try
      (let [[a b] (map :id (for [n ["Ann" "Bob"]] (graph/create-participant! st n)))]
        (doseq [[from story] [[a "upgrade one"] [b "upgrade two"] [a "upgrade three"]]]
          (search/index! st (feeds/publish! st (post-of from story) [])))
        [a b])
      (finally (s/close-store! st)))))

(defn- write-index!
  "Replaces dir's search index by one written directly through Lucene: docs are [id ts from text].
  layout :v1 is the layout before format 2 (`from` stored, `id` a term, sorted by `ts` doc values), :v2
  format 2's (`from` doc values), :broken format 3's with `from` stored (its documents cannot take the
  store's). format, when not nil, is recorded in the commit user data as the store does."
  [dir docs & {:keys [layout format] :or {layout :v2}}]
  (let [sdir (io/file dir "search")
        sort-field (if (= layout :broken) "id" "ts")]
    (fx/delete-tree! sdir)
    (with-open [d (FSDirectory/open (Paths/get (str sdir) (make-array String 0)))
                w (IndexWriter. d (doto (IndexWriterConfig. text/analyzer)
                                    (.setOpenMode IndexWriterConfig$OpenMode/CREATE)
                                    (.setIndexSort (Sort. (into-array SortField [(SortField. sort-field SortField$Type/LONG true)])))))]
      (doseq [[id ts from txt] docs]
        (.addDocument w (doto (Document.)
                          (.add (if (= layout :broken) (NumericDocValuesField. "id" (long id)) (StringField. "id" (str id) Field$Store/NO)))
                          (.add (NumericDocValuesField. "ts" (long ts)))
                          (.add (if (= layout :v2) (NumericDocValuesField. "from" (long from)) (StoredField. "from" (long from))))
                          (.add (TextField. ^String text/field ^String txt Field$Store/NO)))))
      (when format (.setLiveCommitData w (.entrySet (doto (HashMap.) (.put lucene/format-key format)))))
      (.commit w))))

(defn- with-rocks
  "Calls (f db) on the RocksDB of a closed store in dir; returns its value."
  [dir f]
  (let [db (rocks/open-db (io/file dir "rocksdb") {:sync? false :block-cache-mb 8 :write-buffer-mb 4})]
    (try (f db) (finally (rocks/close-db! db)))))

(defn- with-dir [prefix f]
  (let [dir (fx/temp-dir prefix)]
    (try (f dir) (finally (fx/delete-tree! dir)))))

(defn- check-rebuilt [dir [a b]]
  (let [st (open dir)]
    (try
      (is (s/ready? st))
      (is (= [a b a] (search/search st "upgrade")) "every post of RocksDB is found again, newest first")
      (is (= [] (search/search st "stale")) "documents of the replaced index are gone")
      (is (= 3 (:indexed-posts (s/stats st))))
      (let [p (feeds/publish! st (post-of b "upgradetest fresh") [])]
        (search/index! st p)
        (is (= [b] (search/search st "upgradetest")) "a new post becomes searchable"))
      (is (= 0 (:index-errors (s/stats st))))
      (is (= 0 (:index-degraded (s/stats st))))
      (finally (s/close-store! st)))))

(deftest index-of-an-old-build-is-rebuilt
  (with-dir "upgrade-old"
    (fn [dir]
      (let [ab (populate! dir)]
        ;; the layout of builds before format 2: `from` stored, no format in the commit user data
        (write-index! dir [[1 1 (first ab) "upgrade one"] [99 99 42 "stale upgrade"]] :layout :v1)
        (is (= "none" (with-open [d (FSDirectory/open (Paths/get (str dir "/search") (make-array String 0)))]
                        (lucene/index-format d))))
        (check-rebuilt dir ab)
        (testing "the rebuilt index records the format version"
          (is (= lucene/format-version
                 (with-open [d (FSDirectory/open (Paths/get (str dir "/search") (make-array String 0)))]
                   (lucene/index-format d)))))))))

(deftest index-of-another-format-version-is-rebuilt
  (with-dir "upgrade-version"
    (fn [dir]
      (let [ab (populate! dir)]
        (write-index! dir [[99 99 42 "stale upgrade"]] :format "1")
        (check-rebuilt dir ab)))))

(deftest index-of-format-2-is-rebuilt
  (with-dir "upgrade-v2"
    (fn [dir]
      (let [ab (populate! dir)]
        ;; format 2 (ts doc values, id terms, search-pending markers in RocksDB), one post missing
        (write-index! dir [[1 1 (first ab) "upgrade one"] [99 99 42 "stale upgrade"]] :format "2")
        (with-rocks dir (fn [db] (doseq [id [2 3]]
                                   (rocks/put! db :search-pending (c/long-key id) (rocks/get-bytes db :posts (c/long-key id))))))
        (check-rebuilt dir ab)
        (is (= 0 (with-rocks dir (fn [db] (count (rocks/scan db :search-pending nil (constantly true) 100)))))
            "the search-pending markers of format 2 are cleared")))))

(deftest unreadable-index-is-rebuilt
  (with-dir "upgrade-corrupt"
    (fn [dir]
      (let [ab (populate! dir)
            sdir (io/file dir "search")]
        (fx/delete-tree! sdir)
        (.mkdirs sdir)
        (spit (io/file sdir "segments_3") "not a lucene commit")
        (check-rebuilt dir ab)))))

(deftest index-failures-are-counted-and-make-the-store-not-ready
  (with-dir "upgrade-broken"
    (fn [dir]
      (let [[a b] (populate! dir)]
        ;; an old layout wrongly labelled with the current format: the store keeps it, and every
        ;; document it adds conflicts with the doc-values type of `from` (a real Lucene failure)
        (write-index! dir [[1 1 a "upgrade one"] [2 2 b "upgrade two"] [3 3 a "upgrade three"]]
                      :layout :broken :format lucene/format-version)
        (let [st (open dir :index-commit-ms 100)]
          (try
            (is (s/ready? st))
            (is (= :herald.feed.store/unavailable (thrown-type #(search/search st "upgrade")))
                "a search over the broken index is an ex-info the service can map, not an IllegalStateException")
            (is (= 1 (:search-errors (s/stats st))))
            (let [p (feeds/publish! st (post-of b "upgradetest") [])]
              (is (nil? (search/index! st p)) "indexing does not throw into the fan-out work")
              (let [stats (s/stats st)]
                (is (= 1 (:index-errors stats)))
                (is (= 1 (:index-degraded stats)))
                (is (= 1 (:search-pending stats)) "the post stays pending (below the watermark) for the next open"))
              (is (not (s/ready? st)) "a broken index makes the store not ready")
              (is (eventually 30000 #(<= 3 (:index-errors (s/stats st))))
                  "the failed post is retried before each commit, and every failed attempt is counted")
              (is (= 1 (:search-pending (s/stats st))))
              (is (not (s/ready? st))))
            (finally (s/close-store! st))))))))

(deftest stats-are-exact-and-typed
  (with-dir "stats"
    (fn [dir]
      (let [st (open dir)]
        (try
          (let [[a b] (map :id (for [n ["Ann" "Bob"]] (graph/create-participant! st n)))
                ps (doall (for [i (range 50)] (feeds/publish! st (post-of a (str "story " i)) [b])))]
            (is (= 50 (:pending-fanouts (s/stats st))))
            (is (= 50 (:search-pending (s/stats st))))
            (doseq [p (take 30 ps)] (feeds/fan-out! st p [b]) (search/index! st p))
            (feeds/complete-fanout! st (:id (nth ps 30)))
            (feeds/complete-fanout! st (:id (nth ps 30)))
            (is (= 19 (:pending-fanouts (s/stats st))) "idempotent completion is counted once")
            (let [m (s/stats st)]
              (is (= (set (filter s/counter-stats (keys m))) (:herald.feed.store/counters (meta m))))
              (is (every? (:herald.feed.store/counters (meta m)) [:index-errors :search-errors :cache-hits :cache-misses :cache-evictions]))
              (is (every? s/stat-help (keys m)) "every stat has a help text")))
          (finally (s/close-store! st)))
        (let [st (open dir)]
          (try
            (is (= 19 (:pending-fanouts (s/stats st))) "pending fan-outs are counted again on open")
            (is (= 0 (:search-pending (s/stats st))) "the catch-up on open indexed every pending post")
            (is (= 50 (:indexed-posts (s/stats st))))
            (finally (s/close-store! st))))))))
