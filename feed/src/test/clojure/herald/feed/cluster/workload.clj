(ns herald.feed.cluster.workload
  "The cluster tests' client side: a small social graph, a write load spread over several endpoints that
  remembers every acknowledged post, and what readers must then see: each acknowledged post once in its
  author's outbound feed, once in each friend's inbound feed, and once in search."
  (:require [clojure.string :as str]
            [herald.feed.test-util :as u]
            [herald.json :as json])
  (:import (java.net URI)
           (java.net.http HttpRequest HttpRequest$BodyPublishers HttpResponse HttpResponse$BodyHandlers)
           (java.time Duration)
           (java.util.concurrent.atomic AtomicBoolean AtomicLong)))

(set! *warn-on-reflection* true)

(defn link "A participant's link." [id] (str "/participant/" id))

(defn- ok-json
  "The JSON body of a 200 answer to GET base+path, or nil (any other status, or no answer)."
  [base path]
  (try (let [r (u/request base path)] (when (= 200 (:status r)) (:json r)))
       (catch Exception _ nil)))

(defn graph!
  "Creates n participants through `base` and befriends each with the next one and the third next (a ring), so
  each has 4 friends; returns {:ids [..] :friends {id #{friend ids}}}."
  [base n]
  (let [ids (vec (for [i (range n)]
                   (let [r (u/request base "/participant" :method :post :json {:name (str "cluster-" i)})]
                     (or (get-in r [:json "id"]) (throw (ex-info (str "creating a participant failed: " r) {:type ::setup}))))))
        pairs (for [i (range n) d [1 3]] [(ids i) (ids (mod (+ i d) n))])]
    (doseq [[a b] pairs]
      (let [r (u/request base (str (link a) "/friends") :method :post :json {:from (link a) :to (link b)})]
        (when-not (= 200 (:status r)) (throw (ex-info (str "befriending failed: " r) {:type ::setup})))))
    {:ids ids
     :friends (reduce (fn [m [a b]] (-> m (update a (fnil conj #{}) b) (update b (fnil conj #{}) a))) {} pairs)}))

(defn- post!
  "POSTs one outbound item with a 10 s timeout; true when it was acknowledged (200)."
  [base author subject story]
  (try
    (let [body (json/write-str {:from (link author) :occurred "2026-11-25" :subject subject :story story})
          req (-> (HttpRequest/newBuilder (URI/create (str base (link author) "/outbound")))
                  (.timeout (Duration/ofSeconds 10))
                  (.header "Content-Type" "application/json")
                  (.POST (HttpRequest$BodyPublishers/ofString body))
                  (.build))
          ^HttpResponse resp (.send u/client req (HttpResponse$BodyHandlers/discarding))]
      (= 200 (.statusCode resp)))
    (catch Exception _ false)))

(defn start-load!
  "Starts `threads` client threads that post until stopped: post k of thread t goes to endpoint (t + k) mod the
  count of `(endpoints)` (a function, so the set can change during the run), from a participant of the graph.
  Every post carries a unique token (its subject, and a word of its story); a thread pauses pause-ms after each
  post (a paced load: the checks read every post back). Returns {:acked AtomicLong :stop! (fn [] acknowledged
  posts)}; an acknowledged post is {:author id :token s :via url :at ms}."
  [tag graph endpoints threads pause-ms max-per-thread]
  (let [stop (AtomicBoolean. false)
        acked (AtomicLong.)
        ids (:ids graph)
        run (fn [t]
              (loop [k 0 out []]
                (if (or (.get stop) (>= k (long max-per-thread)))
                  out
                  (let [eps (endpoints)
                        base (nth eps (mod (+ t k) (count eps)))
                        author (nth ids (mod (+ (* 7 t) k) (count ids)))
                        token (str tag "t" t "n" k)]
                    (if (post! base author token (str "a story about " token " and the cluster"))
                      (let [at (System/currentTimeMillis)]
                        (.incrementAndGet acked)
                        (Thread/sleep (long pause-ms))
                        (recur (inc k) (conj out {:author author :token token :via base :at at})))
                      (do (Thread/sleep (long pause-ms)) (recur (inc k) out)))))))
        workers (mapv #(future (run %)) (range threads))]
    {:acked acked
     :stop! (fn [] (.set stop true) (vec (mapcat deref workers)))}))

(defn await-acked
  "Waits until the load has `n` acknowledged posts more than `from` (or timeout-ms); returns the count."
  [{:keys [^AtomicLong acked]} from n timeout-ms]
  (let [deadline (+ (System/currentTimeMillis) (long timeout-ms))]
    (loop []
      (let [c (.get acked)]
        (if (or (>= c (+ (long from) (long n))) (> (System/currentTimeMillis) deadline))
          c
          (do (Thread/sleep 50) (recur)))))))

(defn- reader
  "Cycles through the reader endpoints: one per call."
  [readers]
  (let [i (AtomicLong.)] (fn [] (nth readers (mod (.getAndIncrement i) (count readers))))))

(defn- count-problems
  "Problems of one feed: each expected token (a set) present exactly once among `tokens` (subjects read)."
  [what expected tokens]
  (let [freq (frequencies tokens)]
    (concat (for [t expected :when (nil? (freq t))] (str what ": missing " t))
            (for [t expected :when (> (long (freq t 0)) 1)] (str what ": " t " " (freq t) " times")))))

(defn outbound-problems
  "Every acknowledged post exactly once in its author's outbound feed, read through `readers`."
  [readers acked]
  (let [next-reader (reader readers)]
    (doall
     (mapcat (fn [[author posts]]
               (if-let [items (ok-json (next-reader) (str (link author) "/outbound?limit=1000"))]
                 (count-problems (str "outbound of " author) (set (map :token posts)) (map #(get % "subject") items))
                 [(str "outbound of " author ": no answer")]))
             (group-by :author acked)))))

(defn inbound-problems
  "Every acknowledged post exactly once in the inbound feed of each friend of its author, read through `readers`."
  [readers graph acked]
  (let [next-reader (reader readers)]
    (doall
     (mapcat (fn [x]
               (let [expected (set (for [p acked :when (contains? (get-in graph [:friends x]) (:author p))] (:token p)))]
                 (if-let [items (ok-json (next-reader) (str (link x) "/inbound?limit=1000"))]
                   (count-problems (str "inbound of " x) expected (map #(get % "subject") items))
                   [(str "inbound of " x ": no answer")])))
             (:ids graph)))))

(defn search-problems
  "Searches each acknowledged post's token through `readers` until every one finds exactly its author once, or
  timeout-ms; returns the problems (not found by then; found twice, or another sender: at once)."
  [readers acked timeout-ms]
  (let [next-reader (reader readers)
        deadline (+ (System/currentTimeMillis) (long timeout-ms))]
    (loop [pending acked bad []]
      (let [results (mapv (fn [p] [p (ok-json (next-reader) (str "/outbound?keywords=" (:token p)))]) pending)
            bad (into bad (for [[p r] results :when (and (seq r) (not= [(link (:author p))] r))]
                            (str "search " (:token p) ": " (vec r) " instead of [" (link (:author p)) "] once")))
            left (vec (for [[p r] results :when (empty? r)] p))]
        (if (or (empty? left) (> (System/currentTimeMillis) deadline))
          (concat bad (for [p left] (str "search " (:token p) ": not found")))
          (do (Thread/sleep 250) (recur left bad)))))))

(defn eventually-none
  "Calls (problems) until it returns none or timeout-ms passed; returns the last problems."
  [timeout-ms problems]
  (u/eventually timeout-ms empty? problems))

(defn summary
  "A short text of a problem list for an assertion message."
  [problems]
  (str (count problems) " problems, e.g.:\n  " (str/join "\n  " (take 12 problems))))
