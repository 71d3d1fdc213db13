(ns herald.feed.store.durability-test
  "kill -9 at the store level: a child JVM writes and prints each acknowledged write, the test SIGKILLs it,
  reopens the directory and finds every acknowledged write, finishes pending fan-outs, and searches."
  (:require [herald.feed.child-jvm :as child-jvm]
            [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.feed.store :as s]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.search :as search]
            [herald.feed.store.fixtures :as fx])
  (:import (java.io BufferedReader)
           (java.util.concurrent TimeUnit)))

(set! *warn-on-reflection* true)

(defn- child ^Process [dir log]
  (let [^java.util.List cmd [(str (System/getProperty "java.home") "/bin/java") "-Xmx512m"
                             "--enable-native-access=ALL-UNNAMED" "-cp" (child-jvm/classpath)
                             "clojure.main" "-m" "herald.feed.store.crash-child" dir]]
    (-> (ProcessBuilder. cmd) (.redirectError (io/file log)) (.start))))

(defn- acks
  "Reads the child's complete lines until it has printed n posts or timeout-ms passed, kills it with
  SIGKILL, then returns every complete line (split into fields) printed before death."
  [^Process p n timeout-ms]
  (let [lines (atom [])
        rdr (future (try (with-open [^BufferedReader r (io/reader (.getInputStream p))]
                           (doseq [l (line-seq r) :when (str/ends-with? l " .")]
                             (swap! lines conj (vec (butlast (str/split l #" "))))))
                         (catch java.io.IOException e
                           ;; the JDK closes a dead child's pipe under a blocked reader ("Stream closed"):
                           ;; the complete lines read until then are the acknowledgements to check. The
                           ;; pipe can close a moment before isAlive turns false: wait for the exit first
                           (when-not (.waitFor p 5 TimeUnit/SECONDS) (throw e)))))
        deadline (+ (System/currentTimeMillis) timeout-ms)]
    (while (and (< (count (filter #(= "O" (first %)) @lines)) n) (< (System/currentTimeMillis) deadline)
                (.isAlive p))
      (Thread/sleep 5))
    (.destroyForcibly p)
    (.waitFor p 20 TimeUnit/SECONDS)
    (deref rdr 10000 nil)
    @lines))

(defn- verify [st lines]
  (let [rows (group-by first lines) num #(Long/parseLong %)]
    (doseq [[_ id name] (rows "P")]
      (is (= name (:name (graph/participant st (num id)))) (str "participant " id)))
    (doseq [[_ a b fid] (rows "F")]
      (is (some #{{:id (num fid) :from (num a) :to (num b)}} (graph/friends st (num a))) (str "friendship " fid)))
    (let [pending (into {} (map (juxt (comp :id :post) identity)) (feeds/pending-fanouts st))
          delivered (set (map second (rows "D")))]
      (doseq [[_ id from to] (rows "O") :let [post (feeds/post st (num id))]]
        (is (= (num from) (:from post)) (str "post " id))
        (when (and (not= "0" to) (not (delivered id)))
          (is (or (pending (num id)) (some #{post} (:items (feeds/inbound st (num to) {:limit 10000}))))
              (str "post " id " is pending or delivered"))))
      (doseq [{:keys [post recipients]} (vals pending)] (feeds/fan-out! st post recipients)))
    (is (empty? (feeds/pending-fanouts st)))
    (doseq [[_ id from to i] (rows "O")]
      (when (not= "0" to)
        (is (some #(= (num id) (:id %)) (:items (feeds/inbound st (num to) {:limit 10000}))) (str "fan-out of " id)))
      (is (= [(num from)] (search/search st (str "tok" i))) (str "post " id " searchable after restart")))))

(deftest ^:integration acknowledged-writes-survive-kill-9
  (let [dir (fx/temp-dir "crash") log (str dir ".stderr")
        p (child dir log)
        lines (acks p 1000 60000)
        posts (count (filter #(= "O" (first %)) lines))]
    (try
      (if (not-any? #(= ["READY"] %) lines)
        (is false (str "the child never became ready: " (slurp log)))
        (let [st (s/open-store {:type :embedded :data-dir dir})]
          (try
            (is (< 100 posts) "the child acknowledged enough writes before the kill")
            (testing (str posts " acknowledged posts") (verify st lines))
            (finally (s/close-store! st)))))
      (finally (fx/delete-tree! dir) (io/delete-file log true)))))
