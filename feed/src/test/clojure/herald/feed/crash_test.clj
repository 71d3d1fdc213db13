(ns herald.feed.crash-test
  "^:integration THE crash test: the service in a child JVM is killed with SIGKILL in the middle of a write load, restarted on the same data directory, and every acknowledged write must be there, with the fan-out of acknowledged posts completed."
  (:require [herald.feed.child-jvm :as child-jvm]
            [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.feed.test-util :as u])
  (:import (java.io BufferedReader)
           (java.util.concurrent TimeUnit)
           (java.util.concurrent.atomic AtomicBoolean)))

(set! *warn-on-reflection* true)

(defn- start-child
  "Starts herald.feed.Main in a child JVM on `dir`; returns {:process p :base url} once it listens."
  [dir]
  (let [java (str (io/file (System/getProperty "java.home") "bin" "java"))
        ^java.util.List cmd [java "-Xmx512m" "-XX:+UseSerialGC" "-XX:TieredStopAtLevel=1" "--enable-native-access=ALL-UNNAMED"
                                   "-cp" (child-jvm/classpath)
                                   "herald.feed.Main" "--port" "0" "--host" "127.0.0.1"
                             "--profile" "embedded" "--data-dir" dir]
        pb (doto (ProcessBuilder. cmd)
             (.redirectError (java.lang.ProcessBuilder$Redirect/appendTo (io/file dir "child-stderr.log"))))
        p (.start pb)
        out (io/reader (.getInputStream p))
        line (deref (future (loop [] (when-let [l (.readLine ^BufferedReader out)]
                                       (if (str/includes? l "listening on") l (recur)))))
                    120000 nil)]
    (when-not line
      (.destroyForcibly p)
      (throw (ex-info (str "the child feed did not start; see " dir "/child-stderr.log") {:dir dir})))
    ;; keep draining stdout so the child never blocks on a full pipe
    (future (try (while (.readLine ^BufferedReader out)) (catch Exception _)))
    {:process p :base (second (re-find #"listening on (http://\S+)" line)) :line line}))

(defn- link [id] (str "/participant/" id))

(defn- setup! [base]
  (let [req (fn [path & opts] (apply u/request base path opts))
        ids (vec (for [i (range 12)] (get-in (req "/participant" :method :post :json {:name (str "setup-" i)}) [:json "id"])))
        pairs (for [i (range 12) j (range (inc i) 12) :when (zero? (mod (+ i j) 3))] [(ids i) (ids j)])]
    (doseq [[a b] pairs]
      (assert (= 200 (:status (req (str (link a) "/friends") :method :post :json {:from (link a) :to (link b)})))))
    {:ids ids
     :friends-of (fn [x] (set (for [[a b] pairs :when (or (= a x) (= b x))] (if (= a x) b a))))}))

(defn- load-thread
  "Writes until `stop` is set, counting acknowledged posts in `acked-posts`; returns the acknowledged writes."
  [base ids t ^AtomicBoolean stop ^java.util.concurrent.atomic.AtomicLong acked-posts]
  (loop [i 0 acked {:posts [] :participants [] :friendships [] :links {} :edits {} :deletes #{} :touched #{}}]
    (if (or (.get stop) (> i 2000))
      acked
      (let [x (nth ids (mod (+ t i) (count ids)))
            subject (str "crash" t "x" i)
            ok #(try (let [r (apply u/request base %&)] (when (= 200 (:status r)) (:json r)))
                     (catch Exception _ nil))
            ;; issue 11: every 7th request edits, the one after deletes, one of this thread's acknowledged posts
            ;; (each post at most once: :touched; an edit or delete in flight at the kill asserts nothing)
            untouched (remove (:touched acked) (map second (:posts acked)))
            acked (case (int (mod i 7))
                    (0 1 2) (if-let [p (ok (str (link x) "/outbound") :method :post
                                           :json {:from (link x) :occurred "2026-11-22" :subject subject :story (str "story of " subject)})]
                              (do (.incrementAndGet acked-posts)
                                  (-> acked (update :posts conj [x subject]) (assoc-in [:links subject] (get p "link"))))
                              acked)
                    5 (if-let [s (first untouched)]
                        (let [acked (update acked :touched conj s)]
                          (if (ok (get-in acked [:links s]) :method :patch :json {:story (str "edited" s)})
                            (assoc-in acked [:edits s] (str "edited" s))
                            acked))
                        acked)
                    6 (if-let [s (second untouched)]
                        (let [acked (update acked :touched conj s)
                              r (try (u/request base (get-in acked [:links s]) :method :delete) (catch Exception _ nil))]
                          (if (= 204 (:status r)) (update acked :deletes conj s) acked))
                        acked)
                    3 (if-let [p (ok "/participant" :method :post :form {:name subject})]
                        (update acked :participants conj [(get p "id") subject]) acked)
                    4 (let [ps (:participants acked)]
                        (if-let [[a b] (when (>= (count ps) 2) [(first (peek ps)) (first (first ps))])]
                          (if (ok (str (link a) "/friends") :method :post :json {:from (link a) :to (link b)})
                            (update acked :friendships conj [a b]) acked)
                          acked)))]
        (recur (inc i) acked)))))

(defn- eventually [timeout-ms f]
  (let [deadline (+ (System/currentTimeMillis) timeout-ms)]
    (loop [] (let [v (f)] (if (or v (> (System/currentTimeMillis) deadline)) v (do (Thread/sleep 100) (recur)))))))

(deftest ^:integration acknowledged-writes-survive-sigkill
  (let [dir (u/temp-dir "herald-feed-crash")
        first-run (start-child dir)]
    (try
      (let [{:keys [ids friends-of]} (setup! (:base first-run))
            stop (AtomicBoolean. false)
            acked-posts (java.util.concurrent.atomic.AtomicLong.)
            loads (mapv #(future (load-thread (:base first-run) ids % stop acked-posts)) (range 4))]
        ;; kill once the load is well under way: some posts acknowledged, more in flight
        (u/eventually 30000 #(>= (long %) 100) #(.get acked-posts))
        (.destroyForcibly ^Process (:process first-run))      ; SIGKILL mid-load
        (.waitFor ^Process (:process first-run) 30 TimeUnit/SECONDS)
        (.set stop true)
        (let [acked (apply merge-with into (map deref loads))
              ;; a post with a delete acknowledged, or an edit or delete that got no answer (in flight at the
              ;; kill: it may be deleted), is not expected anywhere
              live (fn [posts] (remove (fn [[_ s]] (or ((:deletes acked) s)
                                                       (and ((:touched acked) s) (not ((:edits acked) s)))))
                                       posts))
              second-run (start-child dir)
              req (fn [path & opts] (apply u/request (:base second-run) path opts))]
          (try
            (is (< 20 (count (:posts acked))) "the load got some posts acknowledged before the kill")
            (println "crash test:" (count (:posts acked)) "posts," (count (:participants acked)) "participants,"
                     (count (:friendships acked)) "friendships," (count (:edits acked)) "edits,"
                     (count (:deletes acked)) "deletes acknowledged before SIGKILL")
            (is (< 2 (count (:edits acked))) "some edits acknowledged before the kill")
            (is (< 2 (count (:deletes acked))) "some deletes acknowledged before the kill")
            (testing "every acknowledged participant and friendship is there"
              (doseq [[id name] (:participants acked)]
                (is (= name (get-in (req (link id)) [:json "name"]))))
              (doseq [[a b] (:friendships acked)]
                (is (some #{(link b)} (map #(get % "to") (:json (req (str (link a) "/friends"))))))))
            (testing "every acknowledged post is in its sender's outbound"
              (doseq [[x posts] (group-by first (live (:posts acked)))]
                (let [out (set (map #(get % "subject") (:json (req (str (link x) "/outbound?limit=1000")))))]
                  (is (every? out (map second posts)) (str "outbound of " x)))))
            (testing "the fan-out of every acknowledged post completes after the restart, without duplicates"
              (doseq [x ids]
                (let [expected (set (for [[s subject] (live (:posts acked)) :when ((friends-of x) s)] subject))
                      inbound (eventually 30000
                                          #(let [in (map (fn [m] (get m "subject"))
                                                         (:json (req (str (link x) "/inbound?limit=1000"))))]
                                             (when (every? (set in) expected) in)))]
                  (is (some? inbound) (str "inbound of " x " got every acknowledged post of its friends"))
                  (is (not-any? (:deletes acked) inbound) (str "no acknowledged delete in the inbound of " x))
                  (doseq [item (:json (req (str (link x) "/inbound?limit=1000")))
                          :let [e (get (:edits acked) (get item "subject"))] :when e]
                    (is (= e (get item "story")) "an acknowledged edit in every inbound copy"))
                  (is (= (count inbound) (count (set inbound))) "no duplicate inbound item"))))
            (some->> (slurp (io/file dir "child-stderr.log")) (re-find #"resuming \d+ pending fan-outs") (println "crash test:"))
            (testing "the start line names the bind address; no Lucene vector warning (F12)"
              (is (re-find #"\(bound to 127\.0\.0\.1:\d+; profile embedded" (:line second-run)))
              (is (not (str/includes? (slurp (io/file dir "child-stderr.log")) "vector incubator"))))
            (testing "acknowledged edits and deletes survive (issue 11)"
              (doseq [[s story] (:edits acked)]
                (is (= story (get-in (req (get-in acked [:links s])) [:json "story"])) s))
              (doseq [s (:deletes acked)]
                (is (= 404 (:status (req (get-in acked [:links s])))) s))
              (let [[s story] (first (:edits acked))]
                (is (seq (eventually 10000 #(not-empty (:json (req (str "/outbound?keywords=" story)))))) "an edit is searchable"))
              (doseq [s (take 20 (:deletes acked))]
                (is (= [] (:json (req (str "/outbound?keywords=" s)))) (str "a deleted post is not found: " s))))
            (testing "acknowledged posts are searchable after the restart"
              (let [[_ subject] (last (live (:posts acked)))]
                (is (seq (eventually 10000 #(not-empty (:json (req (str "/outbound?keywords=" subject)))))))))
            (finally (.destroy ^Process (:process second-run))
                     (.waitFor ^Process (:process second-run) 30 TimeUnit/SECONDS)))))
      (finally (.destroyForcibly ^Process (:process first-run))
               (u/delete-tree! dir)))))
