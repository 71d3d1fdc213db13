(ns herald.feed.store.relations-contract
  "The graph role's relationships (unfriend, mutes, blocks) and the search role's pages as contract checks, run
  against every backend through herald.feed.store.contract/checks."
  (:require [clojure.test :refer [is testing]]
            [herald.feed.store :as s]))

(set! *warn-on-reflection* true)

(defn- thrown [f]
  (try (f) nil (catch clojure.lang.ExceptionInfo e (ex-data e))))

(defn- unfriend [st]
  (let [[a b c] (map :id (repeatedly 3 #(s/create-participant! st "p")))
        f1 (s/befriend! st a b)]
    (s/befriend! st a c)
    (is (= [b c] (map :to (s/friends st a))) "read before unfriend (would be cached)")
    (is (= [a] (map :to (s/friends st b))))
    (is (true? (s/unfriend! st b a)) "either order")
    (is (= [c] (map :to (s/friends st a))) "both sides")
    (is (= [] (s/friends st b)))
    (is (false? (s/unfriend! st a b)) "idempotent: not friends any more")
    (is (false? (s/unfriend! st b c)) "never friends")
    (let [f2 (s/befriend! st a b)]
      (is (:created? f2) "befriending again makes a new friendship")
      (is (not= (:id f1) (:id f2)) "with a new id: ids are never reused"))
    (is (= :herald.feed.store/invalid (:type (thrown #(s/unfriend! st a a)))))))

(defn- mutes [st]
  (let [[a b c] (map :id (repeatedly 3 #(s/create-participant! st "p")))]
    (s/befriend! st a b)
    (is (= #{} (s/hidden st a)) "read before mute (would be cached)")
    (is (= {:from a :target c :created? true} (s/mute! st a c)))
    (is (= {:from a :target b :created? true} (s/mute! st a b)))
    (is (= {:from a :target b :created? false} (s/mute! st a b)) "idempotent")
    (is (= [b c] (s/mutes st a)) "ascending ids")
    (is (= #{b c} (s/hidden st a)))
    (is (= #{} (s/hidden st b)) "directed: the muted one sees the muter")
    (is (= [b] (map :to (s/friends st a))) "the friendship is untouched")
    (is (true? (s/unmute! st a b)))
    (is (false? (s/unmute! st a b)) "idempotent")
    (is (= [c] (s/mutes st a)))
    (is (= #{c} (s/hidden st a)))
    (is (= [] (s/mutes st b)))
    (is (= :herald.feed.store/invalid (:type (thrown #(s/mute! st a a)))))))

(defn- blocks [st]
  (let [[a b c d] (map :id (repeatedly 4 #(s/create-participant! st "p")))]
    (s/befriend! st a b)
    (s/befriend! st a c)
    (is (= [b c] (map :to (s/friends st a))) "read before block (would be cached)")
    (is (= #{} (s/hidden st b)))
    (is (= {:from a :target b :created? true} (s/block! st a b)))
    (is (= {:from a :target b :created? false} (s/block! st a b)) "idempotent")
    (is (= [c] (map :to (s/friends st a))) "the block ends the friendship, both sides")
    (is (= [] (s/friends st b)))
    (is (= [b] (s/blocks st a)))
    (is (= [] (s/blocks st b)) "directed")
    (is (= #{b} (s/hidden st a)))
    (is (= #{a} (s/hidden st b)) "the blocked one no longer sees the blocker")
    (doseq [[x y] [[a b] [b a]]]
      (is (= {:type :herald.feed.store/blocked :blocker a :blocked b} (thrown #(s/befriend! st x y)))
          "befriending is refused in both directions"))
    (is (= [] (s/friends st b)) "and writes nothing")
    (s/block! st d a)
    (is (= #{b d} (s/hidden st a)) "blocked by d too")
    (is (true? (s/unblock! st a b)))
    (is (false? (s/unblock! st a b)) "idempotent")
    (is (= #{d} (s/hidden st a)))
    (is (= #{} (s/hidden st b)))
    (is (= [] (map :to (s/friends st b))) "unblocking does not restore the friendship")
    (is (true? (:created? (s/befriend! st b a))) "befriending works again")
    (is (= :herald.feed.store/blocked (:type (thrown #(s/befriend! st a d)))))
    (is (= :herald.feed.store/invalid (:type (thrown #(s/block! st a a)))))
    (is (= :herald.feed.store/invalid (:type (thrown #(s/unblock! st a 0)))))))

(defn- block-races [st]
  (let [pool (java.util.concurrent.Executors/newFixedThreadPool 6)]
    (try
      (dotimes [_ 10]
        (let [[a b] (map :id (repeatedly 2 #(s/create-participant! st "p")))
              start (java.util.concurrent.CountDownLatch. 1)
              tasks (mapv (fn [i] (.submit pool ^Callable (fn [] (.await start)
                                                           (try (if (zero? (long (mod i 3))) (s/block! st a b) (s/befriend! st b a))
                                                                (catch clojure.lang.ExceptionInfo e (:type (ex-data e)))))))
                          (range 6))]
          (.countDown start)
          (run! #(.get ^java.util.concurrent.Future %) tasks)
          (is (= [] (s/friends st a) (s/friends st b)) "a block racing befriends leaves no friendship")))
      (finally (.shutdownNow pool)))))

(defn- search-pages [st]
  (let [[a b] (map :id (repeatedly 2 #(s/create-participant! st "p")))
        ps (vec (for [i (range 7)] (s/publish! st {:from (if (even? i) a b) :occurred "2026-11-22" :subject "page"
                                                   :story (str "wren " i)} [])))
        _ (s/index-batch! st ps)
        _ (s/refresh-search! st)
        walk (fn [n] (loop [acc [] before nil pages 0]
                       (let [{:keys [items next]} (s/search-page st "wren" (cond-> {:limit n} before (assoc :before before)))
                             acc (into acc (map #(select-keys % [:id :from])) items)]
                         (if next (recur acc next (inc pages)) [acc (inc pages)]))))
        expect (mapv #(select-keys % [:id :from]) (rseq ps))]
    (doseq [n [1 2 3 7 10]]
      (let [[items pages] (walk n)]
        (is (= expect items) (str "pages of " n " walk every hit once, newest first"))
        (is (= (max 1 (long (Math/ceil (/ 7.0 n)))) pages) (str "no empty trailing page at limit " n))))
    (is (= (mapv :from (rseq ps)) (s/search st "wren")) "the same hits as search")
    (is (= {:items [] :next nil} (s/search-page st "giraffe")))
    (is (= {:items [] :next nil} (s/search-page st " ;, ")))
    (is (= :herald.feed.store/bad-cursor (:type (thrown #(s/search-page st "wren" {:before "nope"})))))))

(defn- search-hidden
  "A searcher's hidden senders (opts :hidden) are left out by the search itself: every page is full while visible
  hits remain, also when hidden hits come first, between and last, and no page is empty."
  [st]
  (let [[a b c] (map :id (repeatedly 3 #(s/create-participant! st "p")))
        senders [b a b b c a b b b]                         ; oldest first: the newest three and the oldest are b's
        ps (vec (for [[i from] (map-indexed vector senders)]
                  (s/publish! st {:from from :occurred "2026-11-22" :subject "hide" :story (str "finch " i)} [])))
        _ (s/index-batch! st ps)
        _ (s/refresh-search! st)
        walk (fn [hidden n]
               (loop [acc [] sizes [] before nil]
                 (let [{:keys [items next]} (s/search-page st "finch" (cond-> {:limit n :hidden hidden} before (assoc :before before)))
                       acc (into acc (map #(select-keys % [:id :from])) items)
                       sizes (conj sizes (count items))]
                   (if next (recur acc sizes next) [acc sizes]))))
        visible (fn [hidden] (vec (for [p (rseq ps) :when (not (contains? hidden (:from p)))] (select-keys p [:id :from]))))]
    (doseq [hidden [#{b} #{b c} #{a b c} #{c 999999}] n [1 2 3 10]]
      (let [[items sizes] (walk hidden n)
            expect (visible hidden)]
        (is (= expect items) (str "hidden " hidden ", pages of " n ": every visible hit once, newest first"))
        (is (every? #(= n %) (butlast sizes)) (str "hidden " hidden ": every page but the last holds " n))
        (is (or (empty? expect) (pos? (long (peek sizes)))) (str "hidden " hidden ": no empty last page"))))
    (is (= (visible #{}) (first (walk #{} 4)) (first (walk nil 4))) "an empty or nil :hidden hides nothing")
    (is (= :herald.feed.store/invalid (:type (thrown #(s/search-page st "finch" {:hidden [b]})))) ":hidden is a set")
    (is (= :herald.feed.store/invalid (:type (thrown #(s/search-page st "finch" {:hidden #{0}})))) "of ids")))

(def checks
  "name -> (fn [store]), merged into herald.feed.store.contract/checks."
  (array-map "unfriend" unfriend "mutes" mutes "blocks" blocks "block-races" block-races "search-pages" search-pages
             "search-hidden" search-hidden))
