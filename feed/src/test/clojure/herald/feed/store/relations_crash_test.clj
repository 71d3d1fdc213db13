(ns herald.feed.store.relations-crash-test
  "kill -9 of the embedded store's relationships (issue 11): a child JVM befriends, mutes, blocks and unmutes, and
  deletes a post delivered before the block, printing each acknowledged write; the test SIGKILLs it, reopens the
  directory and finds every acknowledged write, and no inbound copy of an acknowledged delete in RocksDB."
  (:require [herald.feed.child-jvm :as child-jvm]
            [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :refer [deftest is]]
            [herald.feed.store :as s]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.embedded.codec :as c]
            [herald.feed.store.embedded.rocks :as rocks]
            [herald.feed.store.fixtures :as fx])
  (:import (java.io BufferedReader)
           (java.util.concurrent TimeUnit)))

(set! *warn-on-reflection* true)

(defn- acks
  "Starts the child on dir, reads its complete lines until it acknowledged n blocks (or 60 s), SIGKILLs it and
  returns the lines (split into fields)."
  [dir log n]
  (let [^java.util.List cmd [(str (System/getProperty "java.home") "/bin/java") "-Xmx512m"
                             "--enable-native-access=ALL-UNNAMED" "-cp" (child-jvm/classpath)
                             "clojure.main" "-m" "herald.feed.store.relations-crash-child" dir]
        p (-> (ProcessBuilder. cmd) (.redirectError (io/file log)) (.start))
        lines (atom [])
        rdr (future (try (with-open [^BufferedReader r (io/reader (.getInputStream p))]
                           (doseq [l (line-seq r) :when (str/ends-with? l " .")]
                             (swap! lines conj (vec (butlast (str/split l #" "))))))
                         ;; the JDK closes a dead child's pipe under a blocked reader: the lines read count
                         (catch java.io.IOException e (when-not (.waitFor p 5 TimeUnit/SECONDS) (throw e)))))
        deadline (+ (System/currentTimeMillis) 60000)]
    (while (and (< (count (filter #(= "K" (first %)) @lines)) n) (< (System/currentTimeMillis) deadline) (.isAlive p))
      (Thread/sleep 5))
    (.destroyForcibly p)
    (.waitFor p 20 TimeUnit/SECONDS)
    (deref rdr 10000 nil)
    @lines))

(deftest ^:integration acknowledged-relationships-survive-kill-9
  (let [dir (fx/temp-dir "relations-crash")
        log (str dir "-child.log")]
    (try
      (let [lines (acks dir log 200)
            by-pair (group-by (fn [[_ x y]] [(Long/parseLong x) (Long/parseLong y)]) (remove #(= ["READY"] %) lines))
            deleted (for [[op x y ts id] lines :when (= "D" op)] (mapv #(Long/parseLong %) [y ts id]))
            left (let [db (rocks/open-db (io/file dir "rocksdb") {:sync? false :block-cache-mb 8 :write-buffer-mb 4})]
                   ;; RocksDB itself, before any read of the store could tidy up
                   (try (count (filter (fn [[y ts id]] (rocks/get-bytes db :inbound (c/feed-key y ts id))) deleted))
                        (finally (rocks/close-db! db))))
            st (s/open-store {:type :embedded :data-dir dir})]
        (is (<= 100 (count deleted)) "the child acknowledged deletes")
        (is (= 0 left) "no inbound copy of an acknowledged delete after a block ended the friendship")
        (is (<= 200 (count (filter #(= "K" (first %)) lines))) (str "the child acknowledged blocks; see " log))
        (try
          ;; the pair in flight at the kill may also hold the write that followed its last acknowledged one (done
          ;; but not yet printed): a block that ended the friendship, an unmute
          (doseq [[[x y] ls] by-pair :let [done (set (map first ls))
                                           in-flight? (= [x y] (last (sort-by first (keys by-pair))))]]
            (cond (done "K") (do (is (= [x] (graph/blocks st y)) (str "block of " x " by " y))
                                 (is (= [] (graph/friends st x)) "the block's unfriend")
                                 (is (= #{y} (graph/hidden st x))))
                  (and in-flight? (= [x] (graph/blocks st y))) (is (= [] (graph/friends st x)) "an unacknowledged block that landed")
                  (done "B") (is (= [y] (map :to (graph/friends st x))) (str "friendship " x " " y)))
            (cond (done "U") (is (= [] (graph/mutes st x)) (str "unmute of " y " by " x))
                  (and in-flight? (done "K")) (is (contains? #{[y] []} (graph/mutes st x)) (str "mute of " y " by " x ", maybe unmuted"))
                  (done "M") (is (= [y] (graph/mutes st x)) (str "mute of " y " by " x))))
          (finally (s/close-store! st))))
      (finally (fx/delete-tree! dir) (io/delete-file log true)))))
