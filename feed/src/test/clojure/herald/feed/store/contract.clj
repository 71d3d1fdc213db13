(ns herald.feed.store.contract
  "The storage contract as tests: every check takes a fresh store; deftests runs them against one backend."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed.store :as s]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.search :as search]
            [herald.feed.store.relations-contract :as relations]))

(set! *warn-on-reflection* true)

(defn thrown-type
  "The ex-data :type thrown by (f), or nil."
  [f]
  (try (f) nil (catch clojure.lang.ExceptionInfo e (:type (ex-data e)))))

(defn post-of
  "A post body from sender with the given story (and subject)."
  ([from story] (post-of from story "subject"))
  ([from story subject] {:from from :occurred "2026-11-22" :subject subject :story story}))

(defn all-pages
  "Every item of a feed read page by page with limit n, and the number of pages."
  [read n]
  (loop [acc [] before nil pages 0]
    (let [{:keys [items next]} (read (cond-> {:limit n} before (assoc :before before)))
          acc (into acc items)]
      (if next (recur acc next (inc pages)) [acc (inc pages)]))))

(defn- participants [st]
  (let [a (graph/create-participant! st "Ann") b (graph/create-participant! st "Zoë 🚀 日本 \"q\" \\/")]
    (is (pos? (:id a)))
    (is (< (:id a) (:id b)) "ids increase")
    (is (= a (graph/participant st (:id a))))
    (is (= "Zoë 🚀 日本 \"q\" \\/" (:name (graph/participant st (:id b)))) "Unicode names round-trip")
    (is (nil? (graph/participant st 999999)))
    (is (= "" (:name (graph/participant st (:id (graph/create-participant! st ""))))) "empty name is kept")
    (is (= ::s/invalid (thrown-type #(graph/participant st -1))))
    (is (= ::s/invalid (thrown-type #(graph/create-participant! st nil))))))

(defn- friends [st]
  (let [[a b c d] (map :id (repeatedly 4 #(graph/create-participant! st "p")))]
    (is (= [] (graph/friends st a)) "read before befriend (would be cached)")
    (let [f1 (graph/befriend! st a c)]
      (is (= {:from a :to c :created? true} (dissoc f1 :id)))
      (is (= (assoc f1 :from c :to a :created? false) (graph/befriend! st c a)) "symmetric and idempotent")
      (is (= (assoc f1 :created? false) (graph/befriend! st a c)))
      (let [f2 (graph/befriend! st b a) f3 (graph/befriend! st a d)]
        (is (= 3 (count (set (map :id [f1 f2 f3])))) "one id per friendship")
        (is (= [{:id (:id f2) :from a :to b} {:id (:id f1) :from a :to c} {:id (:id f3) :from a :to d}]
               (graph/friends st a)) "from is always the owner; ordered by the other's id")
        (is (= [{:id (:id f2) :from b :to a}] (graph/friends st b)))
        (is (= [{:id (:id f1) :from c :to a}] (graph/friends st c)))))
    (is (= ::s/invalid (thrown-type #(graph/befriend! st a a))) "self-friendship is rejected")
    (is (= [] (graph/friends st 424242)))))

(defn- outbound [st]
  (let [a (:id (graph/create-participant! st "a")) b (:id (graph/create-participant! st "b"))
        posts (mapv #(feeds/publish! st (post-of a (str "story " %) (str "subject " %)) []) (range 7))
        other (feeds/publish! st (post-of b "elsewhere") [])]
    (is (apply < (map :ts (conj posts other))) "ts strictly increasing")
    (is (apply < (map :id posts)) "ids increasing")
    (is (= (assoc (post-of a "story 0" "subject 0") :id (:id (first posts)) :ts (:ts (first posts)))
           (first posts)))
    (is (= (rseq posts) (:items (feeds/outbound st a))) "newest first, default page holds all")
    (is (nil? (:next (feeds/outbound st a))))
    (doseq [n [1 2 3 7 10]]
      (let [[items pages] (all-pages #(feeds/outbound st a %) n)]
        (is (= (rseq posts) items) (str "pages of " n " walk every post once"))
        (is (= (max 1 (long (Math/ceil (/ 7.0 n)))) pages) (str "no empty trailing page at limit " n))))
    (is (= [other] (:items (feeds/outbound st b))))
    (is (= {:items [] :next nil} (feeds/outbound st 999999)))
    (is (= (nth posts 3) (feeds/post st (:id (nth posts 3)))))
    (is (nil? (feeds/post st 999999)))
    (is (= ::s/bad-cursor (thrown-type #(feeds/outbound st a {:before "nope"}))))
    (is (= ::s/bad-cursor (thrown-type #(feeds/outbound st a {:before "1.2.3"}))))
    (is (= ::s/invalid (thrown-type #(feeds/outbound st a {:limit 0}))))
    (is (= ::s/invalid (thrown-type #(feeds/outbound st a {:limit "5"}))))
    (is (= ::s/invalid (thrown-type #(feeds/publish! st (dissoc (post-of a "x") :story) []))))
    (is (= ::s/invalid (thrown-type #(feeds/publish! st (post-of a "x") [0]))))))

(defn- unicode [st]
  (let [a (:id (graph/create-participant! st "a"))
        text "Grüße 🚀 \u0000 日本語 עברית \"quoted\" back\\slash \\/ \n\t end"
        p (feeds/publish! st {:from a :occurred "2026-11-22" :subject text :story (apply str (repeat 500 text))} [a])]
    (is (= p (first (:items (feeds/outbound st a)))))
    (feeds/fan-out! st p [a])
    (is (= [p] (:items (feeds/inbound st a))))
    (is (= p (feeds/post st (:id p))))))

(defn- inbound [st]
  (let [[a b r] (map :id (repeatedly 3 #(graph/create-participant! st "p")))
        ps (vec (for [i (range 6)] (feeds/publish! st (post-of (if (even? i) a b) (str "s" i)) [])))]
    (doseq [p (reverse ps)] (feeds/deliver! st r p))
    (feeds/deliver! st r (ps 2))
    (feeds/fan-out! st (ps 3) [r])
    (is (= (rseq ps) (:items (feeds/inbound st r))) "newest first by post time, whatever the delivery order; no duplicate")
    (is (= (rseq ps) (first (all-pages #(feeds/inbound st r %) 4))))
    (is (= {:items [] :next nil} (feeds/inbound st a)))
    (is (= ::s/invalid (thrown-type #(feeds/deliver! st r (dissoc (ps 0) :ts)))))))

(defn- fanouts [st]
  (let [[a b c] (map :id (repeatedly 3 #(graph/create-participant! st "p")))
        p1 (feeds/publish! st (post-of a "one") [b c b])
        p2 (feeds/publish! st (post-of a "two") [c])
        p3 (feeds/publish! st (post-of a "three") [])]
    (is (= [{:post p1 :recipients [b c]} {:post p2 :recipients [c]}] (vec (feeds/pending-fanouts st)))
        "pending, oldest first, recipients distinct; none without recipients")
    (feeds/fan-out! st p1 [b c])
    (feeds/fan-out! st p1 [b c])
    (is (= [{:post p2 :recipients [c]}] (vec (feeds/pending-fanouts st))))
    (feeds/deliver! st c p2)
    (feeds/complete-fanout! st (:id p2))
    (feeds/complete-fanout! st (:id p2))
    (is (empty? (feeds/pending-fanouts st)))
    (is (= [p1] (:items (feeds/inbound st b))))
    (is (= [p2 p1] (:items (feeds/inbound st c))))
    (is (= [p3 p2 p1] (:items (feeds/outbound st a))))))

(defn- search [st]
  (let [[a b] (map :id (repeatedly 2 #(graph/create-participant! st "p")))
        idx! (fn [from story subject] (doto (feeds/publish! st (post-of from story subject) []) (->> (search/index! st))))
        p1 (idx! a "the quick brown fox" "animals")
        _ (idx! b "a lazy dog sleeps" "Animals")
        p3 (idx! a "quick dogs run; Köln Straße" "日本語の記事")
        _ (feeds/publish! st (post-of b "quick but never indexed" "x") [])]
    (is (= [a a] (search/search st "quick")) "one per post, repeated senders kept, newest first")
    (is (= [a] (search/search st "QUICK dogs")) "every term must match, case-insensitive")
    (is (= [b a] (search/search st "animals")) "the subject is indexed too, case-insensitive")
    (is (= [a] (search/search st "köln")))
    (is (= [a] (search/search st "日本")))
    (is (= [a] (search/search st "quick" {:limit 1})))
    (is (= [] (search/search st "giraffe")))
    (let [g (idx! b "Ο ΟΔΥΣΣΕΑΣ και ο σίσυφος" "greek")]
      (is (= [b] (search/search st "οδυσσεας")) "Greek across case: final sigma is sigma (QA Q20)")
      (is (= [b] (search/search st "ΣΊΣΥΦΟΣ")))
      (is (= [b] (search/search st "ΣΙΣΥΦΟΣ")) "tonos folded, as Greek capitals are often written without it")
      (is (= [b] (search/search st "ΟΔΥΣΣΕΑΣ")))
      (is (some? g)))
    (is (= [] (search/search st " ,;! ")) "no word, no match")
    (search/index! st p1)
    (search/index! st p3)
    (is (= [a a] (search/search st "quick")) "indexing is idempotent")
    (is (nil? (search/refresh-search! st)))
    (is (= ::s/invalid (thrown-type #(search/search st nil))))
    (is (= ::s/invalid (thrown-type #(search/search st "x" {:limit -1}))))))

(defn- search-batch [st]
  (let [[a b] (map :id (repeatedly 2 #(graph/create-participant! st "p")))
        ps (vec (for [i (range 12)] (feeds/publish! st (post-of (if (even? i) a b) (str "heron " i) "batch") [])))
        [p0 p1] ps]
    (is (nil? (search/index-batch! st [p1 p0 p1])) "any order, repeats indexed once")
    (is (= [b a] (search/search st "heron")))
    (search/index-batch! st (reverse ps))
    (is (= (mapv #(if (even? %) a b) (range 11 -1 -1)) (search/search st "heron")) "newest first, each post once")
    (is (= [a] (search/search st "heron 4")))
    (is (nil? (search/index-batch! st [])))
    (is (= ::s/invalid (thrown-type #(search/index-batch! st [p0 (dissoc p1 :ts)]))) "every post is validated first")
    (is (= ::s/invalid (thrown-type #(search/index-batch! st nil))))))

(defn- lifecycle [st]
  (is (true? (s/ready? st)))
  (graph/create-participant! st "x")
  (is (every? number? (vals (s/stats st))))
  (is (<= 1 (:participants (s/stats st)))))

;; issue 11: edits and deletes (store/edit-post!, store/delete-post!)
(defn- edits [st]
  (let [[a b c] (map :id (repeatedly 3 #(graph/create-participant! st "p")))
        p1 (feeds/publish! st (post-of a "the old wording" "old subject") [b c])
        p2 (feeds/publish! st (post-of a "to be deleted soon" "gone") [b c])
        p3 (feeds/publish! st (post-of a "deleted before its fan-out" "early") [b])]
    (feeds/fan-out! st p1 [b c])
    (feeds/fan-out! st p2 [b c])
    (search/index-batch! st [p1 p2 p3])
    (search/refresh-search! st)
    (let [e (s/edit-post! st (:id p1) {:story "the new wording"})]
      (is (= (assoc p1 :story "the new wording") e) "id, sender, time and subject kept")
      (is (= e (feeds/post st (:id p1))))
      (is (= "old subject" (:subject (s/edit-post! st (:id p1) {:story "the new wording"}))) "idempotent"))
    (is (= "new subject" (:subject (s/edit-post! st (:id p1) {:subject "new subject"}))))
    (is (= p2 (s/delete-post! st (:id p2))) "the post as it was")
    (is (nil? (s/delete-post! st (:id p2))) "a second delete finds nothing")
    (is (nil? (s/edit-post! st (:id p2) {:story "x"})) "no edit after a delete")
    (is (nil? (feeds/post st (:id p2))))
    (is (= p3 (s/delete-post! st (:id p3))))
    (feeds/fan-out! st p3 [b])
    (search/refresh-search! st)
    (is (= [(:id p1)] (map :id (:items (feeds/outbound st a)))))
    (doseq [r [b c]]
      (is (= [["new subject" "the new wording"]] (map (juxt :subject :story) (:items (feeds/inbound st r))))
          "every inbound copy edited, the deleted posts gone, also one fanned out after its delete"))
    (is (= [a] (search/search st "new")))
    (is (= [] (search/search st "old")))
    (is (= [] (search/search st "deleted")))
    (is (= [] (search/search st "soon")))
    (is (nil? (s/edit-post! st 999999 {:story "x"})))
    (is (= ::s/invalid (thrown-type #(s/edit-post! st (:id p1) {}))))
    (is (= ::s/invalid (thrown-type #(s/edit-post! st (:id p1) {:story 3}))))))

(def checks
  "The contract: name -> (fn [store])."
  (array-map "participants" participants "friends" friends "outbound" outbound "unicode" unicode
             "inbound" inbound "fanouts" fanouts "search" search "search-batch" search-batch
             "lifecycle" lifecycle
             ;; issue 11 relationships and search pages
             "unfriend" (relations/checks "unfriend") "mutes" (relations/checks "mutes")
             "blocks" (relations/checks "blocks") "block-races" (relations/checks "block-races")
             "search-pages" (relations/checks "search-pages") "search-hidden" (relations/checks "search-hidden")
             ;; issue 11 edits and deletes
             "edits" edits))

(defn run-check
  "Runs one check against a fresh store from (open), closing it afterwards with (close store)."
  [open close check]
  (let [st (open)]
    (try (check st) (finally (close st)))))

(defmacro deftests
  "Defines one deftest per contract check, named <prefix>-<check>, each on a fresh store from (open);
  (close store) runs after each."
  [prefix open close]
  `(do ~@(for [k (keys checks)]
           `(deftest ~(symbol (str prefix "-" k))
              (testing ~(str prefix " " k) (run-check ~open ~close (get checks ~k)))))))
