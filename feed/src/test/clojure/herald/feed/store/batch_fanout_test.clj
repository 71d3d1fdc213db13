(ns herald.feed.store.batch-fanout-test
  "The fan-out of a batch of posts in one write (herald.feed.store.feeds/BatchFanOut): the embedded store delivers every post, completes every record, survives a reopen and stays idempotent; the fan-out job's output writes a batch at once and falls back to post-by-post writes when the batch write throws."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed.jobs.posts :as posts]
            [herald.feed.store :as s]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.contract :refer [post-of]]
            [herald.feed.store.fixtures :as fx]
            [herald.flow.spi :as spi]))

(set! *warn-on-reflection* true)

(defn- open [dir]
  (s/open-store {:type :embedded :data-dir dir :block-cache-mb 8 :write-buffer-mb 4 :index-ram-mb 16
                 :search-max-lag-ms 0}))

(deftest embedded-store-fans-out-a-batch-in-one-write
  (let [dir (fx/temp-dir "batch")]
    (try
      (let [[a b c] (let [st (open dir)]
                      (try
                        (let [[a b c] (map :id (for [n ["a" "b" "c"]] (graph/create-participant! st n)))
                              p1 (feeds/publish! st (post-of a "one") [b c])
                              p2 (feeds/publish! st (post-of b "two") [a])
                              p3 (feeds/publish! st (post-of a "three") [b])
                              batch [{:post p1 :recipients [b c]} {:post p2 :recipients [a]} {:post p3 :recipients [b]}]]
                          (is (feeds/batch-fan-out? st) "the (cached) embedded store has the capability")
                          (is (= 3 (count (feeds/pending-fanouts st))))
                          (feeds/fan-out-all! st batch)
                          (is (empty? (feeds/pending-fanouts st)) "every record completed")
                          (is (zero? (:pending-fanouts (s/stats st))))
                          (feeds/fan-out-all! st batch)
                          (is (= ["three" "one"] (map :story (:items (feeds/inbound st b)))) "idempotent: no duplicate")
                          (is (= ["one"] (map :story (:items (feeds/inbound st c)))))
                          (is (= ["two"] (map :story (:items (feeds/inbound st a)))))
                          [a b c])
                        (finally (s/close-store! st))))
            st (open dir)]
        (try
          (testing "after a reopen"
            (is (empty? (feeds/pending-fanouts st)))
            (is (= ["three" "one"] (map :story (:items (feeds/inbound st b)))))
            (is (= ["one"] (map :story (:items (feeds/inbound st c)))))
            (is (= ["two"] (map :story (:items (feeds/inbound st a))))))
          (finally (s/close-store! st))))
      (finally (fx/delete-tree! dir)))))

(defn- seg [id recipients]
  {:post {:id id :from 1 :ts id :occurred "2026-11-22" :subject "s" :story "t"} :recipients recipients})

(defn- output [store done]
  (posts/inbound-output {:inbound/store store :inbound/retries 1 :inbound/done done
                         :inbound/on-error (fn [_ _])}))

(deftest the-output-writes-a-batch-at-once-and-falls-back-post-by-post
  (let [calls (atom [])
        fail-batch? (atom false)
        st (reify
             feeds/BatchFanOut
             (-fan-out-all! [_ ds]
               (swap! calls conj [:batch (mapv (comp :id :post) ds)])
               (when @fail-batch? (throw (RuntimeException. "batch refused"))))
             feeds/InboundStore
             (-fan-out! [_ post _] (swap! calls conj [:one (:id post)])))
        done (atom [])
        out (output st (fn [ok? sg] (swap! done conj [ok? (get-in sg [:post :id])])))]
    (spi/-write! out [(seg 1 [2]) (seg 2 []) (seg 3 [4 5])])
    (is (= [[:batch [1 3]]] @calls) "one call for the batch, posts without recipients left out")
    (is (= [[true 1] [true 2] [true 3]] @done) "every segment reported, also the one without recipients")
    (reset! calls []) (reset! done [])
    (reset! fail-batch? true)
    (spi/-write! out [(seg 6 [2]) (seg 7 [3])])
    (is (= [[:batch [6 7]] [:one 6] [:one 7]] @calls) "a failing batch is retried post by post")
    (is (= [[true 6] [true 7]] @done))
    (reset! calls []) (reset! done [])
    (spi/-write! out [(seg 8 [2])])
    (is (= [[:one 8]] @calls) "a single post goes through fan-out! as before")))
