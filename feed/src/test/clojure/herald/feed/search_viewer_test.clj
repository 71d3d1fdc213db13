(ns herald.feed.search-viewer-test
  "^:integration search filtered by the searcher's mutes and blocks, over real HTTP (issue 11): with auth off the
  `viewer` parameter names the searcher, with auth on its bearer token does; pages stay full and their Link keeps
  the viewer; a search without a viewer is the reference's, unfiltered. On the embedded store (RocksDB + Lucene)
  and, with auth on, in memory; the stores' own filtering is in the contract suite (memory, embedded, OpenSearch)."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.auth.jwt :as jwt]
            [herald.feed.test-util :as u]
            [herald.json :as json])
  (:import (java.net URI)
           (java.net.http HttpRequest HttpResponse HttpResponse$BodyHandlers)))

(set! *warn-on-reflection* true)

(def ^:private ^String secret "search-viewer-test-secret-0123456789abcdef")

(defn- get-json
  "{:status :link :json :www} of a GET of `path`, with a bearer `token` when given."
  [base path & [token]]
  (let [b (cond-> (HttpRequest/newBuilder (URI/create (str base path)))
            token (.header "Authorization" (str "Bearer " token)))
        ^HttpResponse r (.send u/client (.build b) (HttpResponse$BodyHandlers/ofString))
        header #(.orElse (.firstValue (.headers r) ^String %) nil)
        body (str (.body r))]
    {:status (.statusCode r)
     :link (some->> (header "link") (re-find #"^<([^>]+)>; rel=\"next\"$") second)
     :www (header "www-authenticate")
     :json (when-not (str/blank? body) (json/read body {:keywords? false}))}))

(defn- walk
  "Every sender link of a paged search from `path`, following Link rel=next; [links page-sizes next-paths]."
  [base path & [token]]
  (loop [path path acc [] sizes [] nexts []]
    (let [{:keys [status json link]} (get-json base path token)]
      (is (= 200 status) path)
      (if link
        (recur link (into acc json) (conj sizes (count json)) (conj nexts link))
        [(into acc json) (conj sizes (count json)) nexts]))))

(defn- fixture!
  "Participants a b c d; posts with `word` from b, c and d, interleaved so that hidden ones come first, between and
  last; a mutes b, d blocks a. Returns {:ids [a b c d] :expect-all links :expect-a links}, newest first."
  [sys word token-of]
  (let [base (feed/url sys)
        call (fn [method path body actor]
               (let [b (cond-> (HttpRequest/newBuilder (URI/create (str base path)))
                         true (.header "Content-Type" "application/json")
                         (and token-of actor) (.header "Authorization" (str "Bearer " (token-of actor)))
                         true (.method method (java.net.http.HttpRequest$BodyPublishers/ofString (json/write-str body))))
                     ^HttpResponse r (.send u/client (.build b) (HttpResponse$BodyHandlers/ofString))]
                 (is (= 200 (.statusCode r)) (str method " " path " " (.body r)))
                 (json/read (str (.body r)) {:keywords? false})))
        [a b c d] (for [n ["a" "b" "c" "d"]] (get (call "POST" "/participant" {:name n} nil) "id"))
        link #(str "/participant/" %)
        senders [b c b b c d c b b]]                         ; oldest first: newest two and oldest are b's
    (doseq [[i s] (map-indexed vector senders)]
      (call "POST" (str (link s) "/outbound") {:subject word :story (str word " " i)} s))
    (call "POST" (str (link a) "/mutes") {:target (link b)} a)
    (call "POST" (str (link d) "/blocks") {:target (link a)} d)
    (is (feed/await-fanout sys 10000))
    {:ids [a b c d]
     :expect-all (mapv link (reverse senders))
     :expect-a (mapv link (reverse (filter #{c} senders)))}))

(deftest ^:integration viewer-parameter-with-auth-off
  (let [dir (u/temp-dir "herald-feed-search-viewer")
        sys (u/start-feed! dir {:store {:search-max-lag-ms 0}})
        base (feed/url sys)]
    (try
      (let [{[a b c d] :ids :keys [expect-all expect-a]} (fixture! sys "tern" nil)]
        (testing "no viewer: the reference's answer, every match"
          (is (= expect-all (:json (get-json base "/outbound?keywords=tern")))))
        (testing "viewer a: neither the muted b nor d, who blocks a; full pages, the Link keeps the viewer"
          (doseq [n [1 2 3 10]]
            (let [[links sizes nexts] (walk base (str "/outbound?keywords=tern&viewer=/participant/" a "&limit=" n))]
              (is (= expect-a links) (str "pages of " n))
              (is (every? #(= n %) (butlast sizes)) (str "every page but the last holds " n ": " sizes))
              (is (pos? (long (peek sizes))) "no empty last page")
              (is (every? #(str/includes? % (str "viewer=%2Fparticipant%2F" a)) nexts) (str nexts)))))
        (testing "a bare id works as the link does; c, who hides no one, sees every match"
          (is (= expect-a (:json (get-json base (str "/outbound?keywords=tern&viewer=" a)))))
          (is (= expect-all (:json (get-json base (str "/outbound?keywords=tern&viewer=" c))))))
        (testing "an unmute shows b again"
          (let [^HttpResponse r (.send u/client (.build (.DELETE (HttpRequest/newBuilder (URI/create (str base "/participant/" a "/mutes/" b)))))
                         (HttpResponse$BodyHandlers/ofString))]
            (is (= 204 (.statusCode r))))
          (is (= (filterv #(not= % (str "/participant/" d)) expect-all)
                 (:json (get-json base (str "/outbound?keywords=tern&viewer=" a))))
              "only d's posts stay hidden (d blocks a)"))
        (testing "bad viewers: 400 naming viewer, 404 for an unknown one"
          (doseq [v ["" "x" "/participant/0" "-3"]]
            (let [r (get-json base (str "/outbound?keywords=tern&viewer=" (java.net.URLEncoder/encode ^String v "UTF-8")))]
              (is (= [400 "viewer"] [(:status r) (get-in r [:json "field"])]) (pr-str v))))
          (let [r (get-json base "/outbound?keywords=tern&viewer=999999")]
            (is (= [404 "viewer"] [(:status r) (get-in r [:json "field"])])))))
      (finally (feed/stop! sys) (u/delete-tree! dir)))))

(deftest ^:integration bearer-token-with-auth-on
  (let [sys (u/start-feed! nil {:auth {:enabled? true :hs256-secret secret}})
        base (feed/url sys)
        token #(jwt/mint secret % 600)]
    (try
      (let [{[a b] :ids :keys [expect-all expect-a]} (fixture! sys "plover" token)
            q "/outbound?keywords=plover"]
        (is (= expect-all (:json (get-json base q))) "no token: public and unfiltered, as in the reference")
        (is (= expect-a (:json (get-json base q (token a)))) "a's token: a's mutes and blocks hidden")
        (let [[links sizes] (walk base (str q "&limit=1") (token a))]
          (is (= expect-a links) "pages follow with the token")
          (is (every? #(= 1 %) sizes)))
        (is (= expect-a (:json (get-json base (str q "&viewer=/participant/" a) (token a)))) "viewer = the token's participant")
        (let [r (get-json base (str q "&viewer=/participant/" a))]
          (is (= [401 "Authorization"] [(:status r) (get-in r [:json "field"])]) "viewer without a token")
          (is (str/starts-with? (str (:www r)) "Bearer")))
        (let [r (get-json base (str q "&viewer=/participant/" a) (token b))]
          (is (= [403 "viewer"] [(:status r) (get-in r [:json "field"])]) "another participant's viewer"))
        (let [r (get-json base q "not-a-jwt")]
          (is (= 401 (:status r)) "a token that does not verify is refused, not ignored")
          (is (not (str/includes? (pr-str (:json r)) "not-a-jwt")) "the token never in the body")))
      (finally (feed/stop! sys)))))
