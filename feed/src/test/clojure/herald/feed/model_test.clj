(ns herald.feed.model-test
  "^:integration model-based property test: random operation sequences run against the service over HTTP and against an in-memory model of the contract, responses compared."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is use-fixtures]]
            [clojure.test.check :as tc]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [herald.feed :as feed]
            [herald.feed.test-util :as u]))

(set! *warn-on-reflection* true)

(def ^:dynamic *sys* nil)

(use-fixtures :once
  (fn [t]
    (let [dir (u/temp-dir "herald-feed-model")
          sys (u/start-feed! dir)]
      (try (binding [*sys* sys] (t))
           (finally (feed/stop! sys) (u/delete-tree! dir))))))

(def ^:private words ["alpha" "beta" "gamma" "delta" "épée"])

(def gen-op
  "One operation; participant arguments are indices resolved modulo the participants created so far."
  (gen/frequency
   [[3 (gen/fmap (fn [n] [:create n]) (gen/not-empty gen/string-alphanumeric))]
    [3 (gen/tuple (gen/return :befriend) gen/nat gen/nat gen/boolean)]
    [4 (gen/tuple (gen/return :post) gen/nat (gen/elements words) (gen/vector (gen/elements words) 1 4) gen/boolean)]
    [2 (gen/tuple (gen/return :inbound) gen/nat)]
    [2 (gen/tuple (gen/return :outbound) gen/nat)]
    [1 (gen/tuple (gen/return :friends) gen/nat)]
    [1 (gen/tuple (gen/return :get) gen/nat)]
    [1 (gen/tuple (gen/return :search) (gen/elements words))]
    [1 (gen/return [:unknown])]]))

(defn- link [id] (str "/participant/" id))

(defn- pick [model i] (let [ps (:ids model)] (when (seq ps) (nth ps (mod i (count ps))))))

(defn- tag [nonce w] (str w nonce))

(defn- run-op
  "Runs op against the service and the model; returns [model' ok?]."
  [base nonce model [kind a b c d :as op]]
  (let [req (fn [path & opts] (apply u/request base path opts))
        settle #(feed/await-fanout *sys* 10000)]
    (case kind
      :create
      (let [r (req "/participant" :method :post :json {:name a})
            id (get-in r [:json "id"])]
        [(-> model (update :ids conj id) (assoc-in [:names id] a))
         (and (= 200 (:status r)) (= {"id" id "name" a "link" (link id)} (:json r)))])
      :befriend
      (if-let [x (pick model a)]
        (let [y (pick model b)
              r (if c
                  (req (str (link x) "/friends") :method :post :json {:from (link x) :to (link y)})
                  (req (str (link x) "/friends") :method :post :form {:from (link x) :to (link y)}))]
          (if (= x y)
            [model (= 400 (:status r))]
            [(update model :friends conj #{x y})
             (and (= 200 (:status r)) (= {"from" (link x) "to" (link y)} (dissoc (:json r) "id")))]))
        [model true])
      :post
      (if-let [x (pick model a)]
        (let [item {:from (link x) :occurred "2026-11-22" :subject (tag nonce b) :story (str/join " " (map #(tag nonce %) c))}
              r (if d (req (str (link x) "/outbound") :method :post :json item)
                    (req (str (link x) "/outbound") :method :post :form item))
              stored (assoc item :sender x)
              friends (for [f (:friends model) :when (f x)] (first (disj f x)))]
          [(-> (reduce (fn [m f] (update-in m [:inbound f] #(cons stored %))) model friends)
               (update-in [:outbound x] #(cons stored %))
               (update :posts #(cons stored %)))
           (and (= 200 (:status r)) (= (into {} (map (fn [[k v]] [(name k) v])) item) (:json r)))])
        [model true])
      (:inbound :outbound)
      (if-let [x (pick model a)]
        (let [_ (settle)
              r (req (str (link x) "/" (name kind)))
              expect (for [p (get-in model [kind x])]
                       (cond-> {"from" (:from p) "occurred" (:occurred p) "subject" (:subject p) "story" (:story p)}
                         (= kind :inbound) (assoc "to" (link x))))]
          [model (and (= 200 (:status r)) (= expect (:json r)))])
        [model true])
      :friends
      (if-let [x (pick model a)]
        (let [r (req (str (link x) "/friends"))
              others (sort (for [f (:friends model) :when (f x)] (first (disj f x))))]
          [model (and (= 200 (:status r))
                      (= (map #(vector (link x) (link %)) others)
                         (map #(vector (get % "from") (get % "to")) (:json r))))])
        [model true])
      :get
      (if-let [x (pick model a)]
        (let [r (req (link x))]
          [model (= {"id" x "name" (get-in model [:names x]) "link" (link x)} (:json r))])
        [model true])
      :search
      (let [_ (settle)
            w (tag nonce a)
            expect (for [p (:posts model)
                         :when (some #{w} (concat [(:subject p)] (str/split (:story p) #" ")))]
                     (:from p))
            ;; search is eventually consistent (indexing runs after the 200): poll briefly
            r (u/eventually 5000 #(= expect (:json %))
                            #(req (str "/outbound?keywords=" (java.net.URLEncoder/encode ^String w "UTF-8"))))]
        [model (and (= 200 (:status r)) (= expect (:json r)))])
      :unknown
      [model (= 404 (:status (req "/participant/999999999/inbound")))])))

(defn- run-sequence [ops]
  (let [base (feed/url *sys*)
        nonce (apply str (repeatedly 8 #(char (+ 97 (rand-int 26)))))]
    (loop [model {:ids [] :names {} :friends #{} :inbound {} :outbound {} :posts ()}
           [op & more] ops]
      (if-not op
        true
        (let [[model' ok?] (run-op base nonce model op)]
          (if ok? (recur model' more) (do (println "model mismatch at" (pr-str op)) false)))))))

(deftest ^:integration service-matches-the-model
  (let [result (tc/quick-check 40 (prop/for-all [ops (gen/vector gen-op 1 40)] (run-sequence ops))
                               :seed (System/currentTimeMillis) :max-size 40)]
    (is (true? (:pass? result)) (pr-str (select-keys result [:seed :fail :shrunk])))))
