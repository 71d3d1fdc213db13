(ns herald.feed.jobs.posts-test
  "Tests of the fan-out and indexing jobs behind the Fanout protocol: every post delivered and indexed, failures retried then reported, backpressure, drain on close, options named."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed.fanout :as fanout]
            [herald.feed.jobs.posts :as posts]
            [herald.feed.service :as svc]
            [herald.feed.store :as store]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.search :as search])
  (:import (java.util.concurrent CountDownLatch TimeUnit)))

(set! *warn-on-reflection* true)

(defn- people [ctx n]
  (vec (for [i (range n)] (:id (svc/create-participant! ctx {:name (str "p" i)})))))

(deftest every-post-is-delivered-and-indexed
  (let [s (store/open-store {:type :memory})
        f (posts/flow-fanout s {:threads 2 :batch-size 16})
        ctx (svc/context s f {})
        [a b c d] (people ctx 4)]
    (try
      (svc/befriend! ctx a {:to (svc/link b)})
      (svc/befriend! ctx a {:to (svc/link c)})
      (svc/befriend! ctx d {:to (svc/link b)})
      (dotimes [i 300]
        (svc/publish! ctx (if (even? i) a d) {:subject (str "post " i) :story (str "word" i " common")}))
      (is (true? (fanout/await-idle f 30000)))
      (is (= {:submitted 300 :completed 300 :failed 0 :indexed 300 :index-failed 0 :pending 0 :queued 0 :index-queued 0
              :fan-out-lag 0 :index-lag 0}
             (fanout/stats f)))
      (is (= 300 (count (:items (svc/inbound ctx b {:limit 1000})))) "b hears from a and d")
      (is (= 150 (count (:items (svc/inbound ctx c {:limit 1000})))))
      (is (= (count (set (map :id (:items (svc/inbound ctx b {:limit 1000}))))) 300) "no duplicate")
      (is (empty? (:items (svc/inbound ctx d {:limit 10}))) "a's posts do not reach d")
      (is (empty? (feeds/pending-fanouts s)) "every fan-out record completed")
      (is (= [a] (svc/search ctx "word42" 10)))
      (is (= 300 (count (svc/search ctx "common" 1000))))
      (finally (is (true? (fanout/close! f 10000)))))))

(deftest pending-posts-are-resumed
  (let [s (store/open-store {:type :memory})
        a (:id (graph/create-participant! s "a"))
        b (:id (graph/create-participant! s "b"))
        _ (graph/befriend! s a b)
        p (feeds/publish! s {:from a :occurred "2026-11-22" :subject "left" :story "behind"} [b])
        f (posts/flow-fanout s {})]
    (try
      (is (= 1 (svc/resume-pending! {:store s :fanout f})))
      (is (fanout/await-idle f 10000))
      (is (= [(:id p)] (map :id (:items (feeds/inbound s b)))))
      (is (empty? (feeds/pending-fanouts s)))
      (finally (fanout/close! f 10000)))))

(defn- flaky-store
  "The feeds and search of store `st` (a memory store) behind a fan-out that throws for posts with subject
  \"never\" always, \"flaky\" twice, and an indexing that throws for a batch holding \"never\" and for that post."
  [st attempts]
  (let [s (:feeds st)]
    (reify
      feeds/InboundStore
      (-fan-out! [_ post recipients]
        (let [n (get (swap! attempts update (:subject post) (fnil inc 0)) (:subject post))]
          (when (or (= "never" (:subject post)) (and (= "flaky" (:subject post)) (<= n 2)))
            (throw (RuntimeException. "store busy")))
          (feeds/-fan-out! s post recipients)))
      search/SearchIndex
      (-index-batch! [_ posts]
        (if (some #(= "never" (:subject %)) posts) (throw (RuntimeException. "bad batch")) (search/-index-batch! s posts)))
      (-index! [_ post]
        (if (= "never" (:subject post)) (throw (RuntimeException. "index broken")) (search/-index! s post))))))

(deftest failures-are-retried-then-reported-and-the-job-goes-on
  (let [s (store/open-store {:type :memory})
        a (:id (graph/create-participant! s "a"))
        b (:id (graph/create-participant! s "b"))
        attempts (atom {})
        errors (atom [])
        f (posts/flow-fanout (flaky-store s attempts)
                             {:retries 2 :on-error (fn [t job] (swap! errors conj [(ex-message t) (get-in job [:post :subject])]))})
        publish #(let [p (feeds/publish! s {:from a :occurred "2026-11-22" :subject % :story "x"} [b])]
                   (fanout/submit! f {:post p :recipients [b]}))]
    (try
      (run! publish ["flaky" "never" "fine"])
      (is (fanout/await-idle f 10000))
      (is (= {"flaky" 3 "never" 3 "fine" 1} @attempts))
      (is (= #{["store busy" "never"] ["index broken" "never"]} (set @errors)))
      (is (= {:completed 2 :failed 1 :indexed 2 :index-failed 1}
             (select-keys (fanout/stats f) [:completed :failed :indexed :index-failed]))
          "a batch that fails is indexed post by post: the bad post does not hold back the others")
      (is (= 2 (count (search/search s "x"))) "the other two are searchable")
      (is (= #{"flaky" "fine"} (set (map :subject (:items (feeds/inbound s b))))))
      (is (= ["never"] (map (comp :subject :post) (feeds/pending-fanouts s))) "the failed one stays pending for the next start")
      (finally (fanout/close! f 10000)))))

(defn- blocking-store [^CountDownLatch gate seen]
  (reify
    feeds/InboundStore
    (-fan-out! [_ post _] (.await gate 30 TimeUnit/SECONDS) (swap! seen conj (:id post)))
    search/SearchIndex
    (-index-batch! [_ _])
    (-index! [_ _])))

(defn- post [id] {:post {:id id :from 1 :ts id :occurred "2026-11-22" :subject "s" :story "t"} :recipients [2]})

(deftest a-full-queue-holds-the-submitter-back
  (let [gate (CountDownLatch. 1)
        seen (atom #{})
        f (posts/flow-fanout (blocking-store gate seen) {:queue-size 2 :batch-size 1 :threads 1})
        submitter (future (doseq [i (range 1 201)] (fanout/submit! f (post i))) :done)]
    (try
      (is (= ::waiting (deref submitter 500 ::waiting)) "200 posts do not fit: the submitter waits")
      (is (< (:submitted (fanout/stats f)) 200))
      (.countDown gate)
      (is (= :done (deref submitter 30000 ::timeout)))
      (is (fanout/await-idle f 30000))
      (is (= (set (range 1 201)) @seen))
      (finally (.countDown gate) (fanout/close! f 10000)))))

(deftest close-drains-queued-posts-then-refuses-more
  (let [seen (atom #{})
        f (posts/flow-fanout (reify
                               feeds/InboundStore
                               (-fan-out! [_ post _] (Thread/sleep 1) (swap! seen conj (:id post)))
                               search/SearchIndex
                               (-index-batch! [_ _])
                               (-index! [_ _]))
                             {:threads 1 :batch-size 8})]
    (doseq [i (range 1 301)] (fanout/submit! f (post i)))
    (is (true? (fanout/close! f 30000)))
    (is (= (set (range 1 301)) @seen) "every queued post ran before close returned")
    (is (= :herald.feed/unavailable (:type (ex-data (try (fanout/submit! f (post 999)) (catch Exception e e))))))
    (is (true? (fanout/close! f 1000)) "close is idempotent")))

(deftest options-are-validated-naming-the-key
  (let [s (store/open-store {:type :memory})
        e #(try (posts/flow-fanout s %) nil (catch clojure.lang.ExceptionInfo e (ex-data e)))]
    (is (= {:type :herald.feed/config :key [:fanout :threads] :value 0} (e {:threads 0})))
    (is (= [:fanout :batch-size] (:key (e {:batch-size "many"}))))
    (is (= [:fanout :batch-timeout-ms] (:key (e {:batch-timeout-ms -1}))))
    (is (= [:fanout :thread] (:key (e {:thread 2}))) "an unknown key is named")))
