(ns herald.feed.store.embedded-test
  "The storage contract against the embedded store (RocksDB + Lucene), plus reopen and index catch-up."
  (:require [clojure.java.io :as io]
            [clojure.test :refer [deftest is testing]]
            [herald.feed.store :as s]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.search :as search]
            [herald.feed.store.contract :as contract :refer [post-of thrown-type]]
            [herald.feed.store.cache]
            [herald.feed.store.embedded]
            [herald.feed.store.embedded.lucene :as lucene]
            [herald.feed.store.fixtures :as fx]
            [herald.feed.store.text :as text])
  (:import (java.nio.file Paths)
           (java.util HashMap)
           (org.apache.lucene.index IndexWriter IndexWriterConfig)
           (org.apache.lucene.store FSDirectory)))

(set! *warn-on-reflection* true)

(contract/deftests embedded fx/open-embedded fx/close-embedded!)

(defn- open [dir & {:as opts}]
  (s/open-store (merge {:type :embedded :data-dir dir :block-cache-mb 8 :write-buffer-mb 4 :index-ram-mb 16 :search-max-lag-ms 0}
                       opts)))

(defn- populate! [st]
  (let [[a b c] (map :id (for [n ["Ann" "Bob" "Čeněk"]] (graph/create-participant! st n)))
        f (graph/befriend! st a b)
        p1 (feeds/publish! st (post-of a "alpha story" "one") [b])
        p2 (feeds/publish! st (post-of b "beta story" "two") [a c])]
    (feeds/fan-out! st p1 [b])
    (search/index! st p1)
    {:a a :b b :c c :f f :p1 p1 :p2 p2}))

(deftest reopen-keeps-everything
  (let [dir (fx/temp-dir "reopen")]
    (try
      (let [{:keys [a b c f p1 p2]} (let [st (open dir)] (try (populate! st) (finally (s/close-store! st))))
            st (open dir)]
        (try
          (is (= "Čeněk" (:name (graph/participant st c))))
          (is (= [{:id (:id f) :from b :to a}] (graph/friends st b)))
          (is (= (assoc f :created? false) (graph/befriend! st a b)) "friendship ids survive")
          (is (= [p1] (:items (feeds/outbound st a))))
          (is (= [p1] (:items (feeds/inbound st b))))
          (is (= [{:post p2 :recipients [a c]}] (vec (feeds/pending-fanouts st))) "pending fan-out survives")
          (is (= [a] (search/search st "alpha")))
          (is (= [b] (search/search st "beta")) "a post never passed to index! is indexed on open")
          (testing "ids and timestamps continue, never reused"
            (let [d (:id (graph/create-participant! st "Dora")) p3 (feeds/publish! st (post-of d "gamma") [])]
              (is (> d c))
              (is (> (:id p3) (:id p2)))
              (is (> (:ts p3) (:ts p2)))
              (is (< (:id f) (:id (graph/befriend! st c d))))))
          (finally (s/close-store! st))))
      (finally (fx/delete-tree! dir)))))

(deftest index-is-rebuilt-when-lost
  (let [dir (fx/temp-dir "rebuild")]
    (try
      (let [{:keys [a b]} (let [st (open dir)] (try (populate! st) (finally (s/close-store! st))))]
        (fx/delete-tree! (io/file dir "search"))
        (let [st (open dir)]
          (try
            (is (= [a] (search/search st "alpha")))
            (is (= [b] (search/search st "beta")))
            (is (= [b a] (search/search st "story")))
            (finally (s/close-store! st)))))
      (finally (fx/delete-tree! dir)))))

(defn- set-watermark!
  "Rewrites the last commit of dir's search index with watermark w, as a commit made while those posts
  were still being indexed records (posts above the watermark may be in the commit)."
  [dir w]
  (with-open [d (FSDirectory/open (Paths/get (str dir "/search") (make-array String 0)))
              iw (IndexWriter. d (IndexWriterConfig. text/analyzer))]
    (.setLiveCommitData iw (.entrySet (doto (HashMap.) (.put lucene/format-key lucene/format-version)
                                        (.put lucene/watermark-key (str w)))))
    (.commit iw)))

(deftest no-duplicate-when-the-commit-holds-posts-above-its-watermark
  (let [dir (fx/temp-dir "dup")]
    (try
      (let [[a ps] (let [st (open dir)]
                     (try
                       (let [a (:id (graph/create-participant! st "a"))
                             ps (vec (for [_ (range 3)] (doto (feeds/publish! st (post-of a "walrus") []) (->> (search/index! st)))))]
                         [a ps])
                       (finally (s/close-store! st))))
            _ (set-watermark! dir (:id (first ps)))
            st (open dir)]
        (try
          (is (= [a a a] (search/search st "walrus")) "catch-up skips posts already in the index")
          (is (zero? (:search-pending (s/stats st))))
          (finally (s/close-store! st))))
      (finally (fx/delete-tree! dir)))))

(deftest posts-above-the-watermark-missing-from-the-index-are-indexed-on-open
  (let [dir (fx/temp-dir "above")]
    (try
      (let [[a b] (let [st (open dir)]
                    (try
                      (let [a (:id (graph/create-participant! st "a")) b (:id (graph/create-participant! st "b"))]
                        (search/index! st (feeds/publish! st (post-of a "walrus one") []))
                        (feeds/publish! st (post-of b "walrus two") [])
                        (search/index! st (feeds/publish! st (post-of a "walrus three") []))
                        (is (= 3 (:search-pending (s/stats st))) "posts not in a commit yet: one never indexed, two uncommitted")
                        [a b])
                      (finally (s/close-store! st))))
            st (open dir)]
        (try
          (is (= [a b a] (search/search st "walrus")) "the post never passed to index! is indexed on open, once")
          (is (zero? (:search-pending (s/stats st))))
          (finally (s/close-store! st)))
        (let [st (open dir)]
          (try
            (is (= [a b a] (search/search st "walrus")) "a second open adds nothing")
            (finally (s/close-store! st)))))
      (finally (fx/delete-tree! dir)))))

(deftest index-batch-indexes-each-post-once
  (let [st (fx/open-embedded)]
    (try
      (let [a (:id (graph/create-participant! st "a"))
            ps (vec (repeatedly 30 #(feeds/publish! st (post-of a "ibex") [])))]
        (search/index! st (first ps))
        (run! deref (doall (for [_ (range 3)] (future (search/index-batch! st (into ps (shuffle ps)))))))
        (search/index-batch! st [])
        (search/refresh-search! st)
        (is (= 30 (count (search/search st "ibex" {:limit 100}))))
        (is (= 30 (:indexed-posts (s/stats st))))
        (is (= ::s/invalid (thrown-type #(search/index-batch! st [(first ps) {:id 1}]))) "a malformed post fails the call")
        (is (= ::s/invalid (thrown-type #(search/index-batch! st (first ps)))) "posts must be a collection"))
      (finally (fx/close-embedded! st)))))

(deftest concurrent-index-calls-add-one-document
  (let [st (fx/open-embedded)]
    (try
      (let [a (:id (graph/create-participant! st "a"))
            ps (vec (repeatedly 20 #(feeds/publish! st (post-of a "narwhal") [])))]
        (run! deref (doall (for [_ (range 4)] (future (doseq [p (shuffle ps)] (search/index! st p))))))
        (is (= 20 (count (search/search st "narwhal" {:limit 100})))))
      (finally (fx/close-embedded! st)))))

(deftest search-sees-writes-at-once-and-commits-in-background
  (let [dir (fx/temp-dir "commit")
        st (open dir :index-commit-ms 50 :index-refresh-ms 20)]
    (try
      (let [a (:id (graph/create-participant! st "a"))
            p (feeds/publish! st (post-of a "zebra") [])]
        (search/index! st p)
        (is (= [a] (search/search st "zebra")) "read-your-writes")
        (loop [n 0] (when (and (pos? (:search-pending (s/stats st))) (< n 100)) (Thread/sleep 20) (recur (inc n))))
        (is (zero? (:search-pending (s/stats st))) "the periodic commit holds every indexed post"))
      (finally (s/close-store! st) (fx/delete-tree! dir)))))

(deftest near-real-time-search-by-default
  (let [dir (fx/temp-dir "nrt")
        st (s/open-store {:type :embedded :data-dir dir :index-refresh-ms 60000 :search-max-lag-ms 60000})]
    (try
      (let [a (:id (graph/create-participant! st "a"))]
        (search/index! st (feeds/publish! st (post-of a "okapi") []))
        (is (= [] (search/search st "okapi")) "not visible before a refresh when the lag allows it")
        (search/refresh-search! st)
        (is (= [a] (search/search st "okapi")) "visible after refresh-search!"))
      (finally (s/close-store! st) (fx/delete-tree! dir)))))

(deftest closed-store-refuses-calls
  (let [dir (fx/temp-dir "closed") st (open dir)]
    (s/close-store! st)
    (s/close-store! st)
    (is (false? (s/ready? st)))
    (is (= ::s/closed (thrown-type #(graph/create-participant! st "x"))))
    (is (= ::s/closed (thrown-type #(search/search st "x"))))
    (fx/delete-tree! dir)))

(deftest one-process-per-directory
  (let [dir (fx/temp-dir "locked") st (open dir)]
    (try
      (let [e (try (open dir) nil (catch Exception e e))]
        (is (= ::s/io (:type (ex-data e))) "a second open of a directory in use fails cleanly")
        (is (= dir (:value (ex-data e)))))
      (finally (s/close-store! st) (fx/delete-tree! dir)))))

(deftest sync-writes
  (let [dir (fx/temp-dir "sync") st (open dir :sync? true)]
    (try
      (let [a (graph/create-participant! st "a") p (feeds/publish! st (post-of (:id a) "fsynced") [])]
        (is (= p (feeds/post st (:id p)))))
      (finally (s/close-store! st) (fx/delete-tree! dir)))))

(deftest options-are-validated
  (is (= :sync? (:key (ex-data (try (open "/tmp/x" :sync? "yes") (catch Exception e e))))))
  (is (= :index-ram-mb (:key (ex-data (try (open "/tmp/x" :index-ram-mb 0) (catch Exception e e))))))
  (is (= :type (:key (ex-data (try (s/open-store {:type :nope}) (catch Exception e e)))))))
