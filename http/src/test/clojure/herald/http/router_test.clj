(ns herald.http.router-test
  "Router: matching, priority, params decoding, 404/405/Allow, HEAD/OPTIONS, conflicts, nesting, arities."
  (:require [clojure.string :as str]
            [herald.http.measure :refer [ns-per-op]]
            [clojure.test :refer [deftest is testing]]
            [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [herald.json :as json]
            [herald.http.router :as r]))

(set! *warn-on-reflection* true)

(defn- echo [tag] (fn [req] {:status 200 :body {:tag tag :params (:path-params req)
                                                   :route (:herald.http/route req)
                                                   :name (:herald.http/route-name req)}}))

(def routes
  [["/participant" {:post (echo :create) :name ::participants}]
   ["/participant/new" {:get (echo :new)}]
   ["/participant/:id" {:get (echo :show) :delete (echo :delete) :name ::participant}]
   ["/participant/:id/friends" {:get (echo :friends) :post (echo :befriend)}]
   ["/files/*path" {:get (echo :file)}]
   ["/" {:get (echo :root)}]])

(defn- call [h method uri] (h {:request-method method :uri uri :headers {}}))

(deftest matches-paths-and-decodes-params
  (let [h (r/router routes)]
    (is (= {:tag :show :params {:id "7"} :route "/participant/:id" :name ::participant}
           (:body (call h :get "/participant/7"))))
    (is (= :new (-> (call h :get "/participant/new") :body :tag)) "static beats param")
    (is (= {:id "jöe doe/x"} (-> (call h :get "/participant/j%C3%B6e%20doe%2Fx") :body :params)))
    (is (= {:id "a+b"} (-> (call h :get "/participant/a+b") :body :params)) "+ is not a space in paths")
    (is (= {:id "9"} (-> (call h :post "/participant/9/friends") :body :params)))
    (is (= {:path "a/b c.txt"} (-> (call h :get "/files/a/b%20c.txt") :body :params)))
    (is (= {:path ""} (-> (call h :get "/files/") :body :params)))
    (is (= :root (-> (call h :get "/") :body :tag)))
    (is (= {} (-> (call h :post "/participant") :body :params)))
    (is (= ::participants (-> (call h :post "/participant") :body :name)))))

(deftest not-found-and-method-not-allowed
  (let [h (r/router routes)]
    (doseq [uri ["/nope" "/participant/7/enemies" "/participant/" "" "/participant//friends"]]
      (let [resp (call h :get uri)]
        (is (= 404 (:status resp)) uri)
        (is (= {"error" "not found"} (json/read (:body resp))))))
    (let [resp (call h :put "/participant/7")]
      (is (= 405 (:status resp)))
      (is (= "GET, HEAD, DELETE, OPTIONS" (get-in resp [:headers "Allow"])))
      (is (= {"error" "method not allowed"} (json/read (:body resp)))))
    (is (= "POST, OPTIONS" (get-in (call h :get "/participant") [:headers "Allow"])))))

(deftest automatic-head-and-options
  (let [h (r/router (conj routes ["/own" {:get (echo :get) :head (fn [_] {:status 299})
                                          :options (fn [_] {:status 200 :body "mine"})}]))]
    (is (= :show (-> (call h :head "/participant/7") :body :tag)) "HEAD uses GET's handler")
    (is (= 299 (:status (call h :head "/own"))))
    (is (= {:status 204 :headers {"Allow" "GET, HEAD, DELETE, OPTIONS"}} (call h :options "/participant/7")))
    (is (= "mine" (:body (call h :options "/own"))))
    (is (= 405 (:status (call h :head "/participant"))) "no GET, no HEAD")))

(deftest any-method-and-extension-methods
  (let [h (r/router [["/x" {:get (echo :get) :any (echo :any)}] ["/cache" {:purge (echo :purge)}]])]
    (is (= :any (-> (call h :patch "/x") :body :tag)))
    (is (= :get (-> (call h :get "/x") :body :tag)))
    (is (= :purge (-> (call h :purge "/cache") :body :tag)))
    (is (= "PURGE, OPTIONS" (get-in (call h :get "/cache") [:headers "Allow"])))))

(deftest custom-not-found-and-method-not-allowed
  (let [h (r/router routes {:not-found (fn ([req] {:status 404 :body (str "no " (:uri req))})
                                         ([req respond _] (respond {:status 404 :body "async no"})))
                            :method-not-allowed (fn [req] {:status 405 :body (:herald.http/allow req)})})]
    (is (= "no /zz" (:body (call h :get "/zz"))))
    (let [resp (call h :patch "/participant")]
      (is (= "POST, OPTIONS" (:body resp)))
      (is (= "POST, OPTIONS" (get-in resp [:headers "Allow"])) "Allow added when the handler left it out"))
    (let [p (promise)]
      (h {:request-method :get :uri "/zz"} p p)
      (is (= "async no" (:body (deref p 30000 nil)))))))

(deftest nested-routes-and-middleware-order
  (let [trace (fn [tag] (fn [handler] (fn [req] (handler (update req :trace (fnil conj []) tag)))))
        with-arg (fn [handler x] (fn [req] (handler (update req :trace (fnil conj []) x))))
        show (fn [req] {:status 200 :body (:trace req) :params (:path-params req)})
        h (r/router [["/api" {:middleware [(trace :api)]}
                      ["/a" {:get show :middleware [[with-arg :a]]}]
                      ["/b/:id" {:get show}]
                      [["/c" {:get show}] nil (list ["/d" {:get show}])]
                      ["/v1" ["/e" {:get show}]]
                      ["/m" {:get {:handler show :middleware [(trace :get-only)]} :post show}]]
                     ["/plain" {:get show}]]
                    {:middleware [(trace :global)]})]
    (is (= [:global :api :a] (:body (call h :get "/api/a"))))
    (is (= [:global :api] (:body (call h :get "/api/b/3"))))
    (is (= {:id "3"} (:params (call h :get "/api/b/3"))) "middleware sees path params")
    (is (= [:global :api] (:body (call h :get "/api/c"))))
    (is (= [:global :api] (:body (call h :get "/api/d"))))
    (is (= [:global :api] (:body (call h :get "/api/v1/e"))))
    (is (= [:global] (:body (call h :get "/plain"))))
    (is (= [:global :api :get-only] (:body (call h :get "/api/m"))) "per-method middleware is innermost")
    (is (= [:global :api] (:body (call h :post "/api/m"))))
    (is (= 404 (:status (call h :get "/api"))))
    (is (= ["/api/a" "/api/b/:id" "/api/c" "/api/d" "/api/v1/e" "/api/m" "/plain"] (mapv :path (r/routes h))))))

(deftest async-arity
  (let [h (r/router [["/a/:id" {:get (fn [req respond _] (future (respond {:status 200 :body (:path-params req)})))}]
                     ["/boom" {:get (fn [_ _ raise] (raise (ex-info "boom" {})))}]])
        call-async (fn [method uri]
                     (let [p (promise)]
                       (h {:request-method method :uri uri :headers {}} #(deliver p [:ok %]) #(deliver p [:err %]))
                       (deref p 30000 :timeout)))]
    (is (= [:ok {:status 200 :body {:id "1"}}] (call-async :get "/a/1")))
    (is (= 404 (:status (second (call-async :get "/zz")))))
    (let [[k resp] (call-async :post "/a/1")]
      (is (= :ok k))
      (is (= 405 (:status resp)))
      (is (= "GET, HEAD, OPTIONS" (get-in resp [:headers "Allow"]))))
    (is (= 204 (:status (second (call-async :options "/a/1")))))
    (is (= "boom" (ex-message (second (call-async :get "/boom")))))))

(defn- thrown-data [f] (try (f) nil (catch clojure.lang.ExceptionInfo e (ex-data e))))

(deftest conflicts-and-malformed-routes-fail-at-construction
  (let [d (thrown-data #(r/router [["/a/:x" {:get identity :name :one}] ["/a/:y" {:get identity :name :two}]]))]
    (is (= :herald.http/route-conflict (:type d)))
    (is (= [{:path "/a/:x" :name :one} {:path "/a/:y" :name :two}] (:routes d))))
  (is (= :herald.http/route-conflict (:type (thrown-data #(r/router [["/a" {:get identity}] ["/a" {:post identity}]])))))
  (is (= :herald.http/route-conflict (:type (thrown-data #(r/router [["/api" ["/x" {:get identity}]] ["/api/x" {:get identity}]])))))
  (doseq [bad [[["a" {:get identity}]]
               [["/a/:" {:get identity}]]
               [["/a/*x/b" {:get identity}]]
               [["/a" {:get identity :middelware []}]]
               [["/a" {:get "not a fn"}]]
               [["/a" {:get {:handler identity :extra 1}}]]
               [["/a" {:get {:middleware []}}]]
               [["/a" {:name :only}]]
               [[:not-a-route]]]]
    (is (= :herald.http/malformed-route (:type (thrown-data #(r/router bad)))) (pr-str bad)))
  (is (= {:type :herald.http/invalid-option :key :not-found :value 3}
         (thrown-data #(r/router routes {:not-found 3}))))
  (is (= :herald.http/invalid-option (:type (thrown-data #(r/router routes {:bogus 1}))))))

(deftest match-for-tools
  (let [h (r/router routes)]
    (is (= {:template "/participant/:id" :name ::participant :path-params {:id "5"} :methods #{:get :delete}}
           (r/match h "/participant/5")))
    (is (nil? (r/match h "/missing")))
    (is (= "/files/*path" (:template (r/match routes "/files/x"))) "route data works too")))

(deftest reverse-routing
  (let [h (r/router [["/participant/:id" {:get identity :name ::participant}]
                     ["/files/*path" {:get identity :name ::file}]
                     ["/about" {:get identity :name ::about}]])]
    (is (= "/participant/7" (r/path-for h ::participant {:id 7})))
    (is (= "/participant/J%C3%B6rg%20D%2Fx" (r/path-for h ::participant {:id "Jörg D/x"})))
    (is (= {:id "Jörg D/x"} (:path-params (r/match h (r/path-for h ::participant {:id "Jörg D/x"})))))
    (is (= "/files/a/b%20c.txt" (r/path-for h ::file {:path "a/b c.txt"})))
    (is (= "/about" (r/path-for h ::about)))
    (is (= {:type :herald.http/missing-path-param :template "/participant/:id" :param :id}
           (thrown-data #(r/path-for h ::participant {}))))
    (is (= :herald.http/unknown-route-name (:type (thrown-data #(r/path-for h ::nope))))))
  (is (= {:type :herald.http/duplicate-route-name :name :x :routes ["/a" "/b"]}
         (thrown-data #(r/router [["/a" {:get identity :name :x}] ["/b" {:get identity :name :x}]])))))

;; ---------------------------------------------------------------- the trie against a reference model

(defn- shape [template] (str/replace template #"([:*])[a-z0-9]+" "$1"))

(defn- segments [^String path] (vec (.split (subs path 1) "/" -1)))

(defn- reference-match
  "The template's params when it matches `path`, else nil; and its rank (static 0, param 1, wildcard 2 per segment)."
  [template path]
  (let [ts (segments template) ps (segments path)]
    (loop [i 0 params {} rank []]
      (if (= i (count ts))
        (when (= i (count ps)) [params rank])
        (let [t (nth ts i) p (get ps i)]
          (cond
            (nil? p) nil
            (str/starts-with? t "*") [(assoc params (keyword (subs t 1)) (str/join "/" (subvec ps i))) (conj rank 2)]
            (str/starts-with? t ":") (when (seq p) (recur (inc i) (assoc params (keyword (subs t 1)) p) (conj rank 1)))
            (= t p) (recur (inc i) params (conj rank 0))))))))

(defn- reference-router [templates path]
  (->> templates
       (keep (fn [t] (when-let [[params rank] (reference-match t path)] {:template t :path-params params :rank rank})))
       (sort-by #(vec (take 8 (concat (:rank %) (repeat -1)))))
       first))

(def gen-template
  (gen/let [n (gen/choose 1 3)
            segs (gen/vector (gen/elements ["a" "b" ":p" "*w" ""]) n)]
    (let [segs (map-indexed (fn [i s] (cond (= s ":p") (str ":p" i) (= s "*w") (str "*w" i) :else s)) segs)
          cut (or (some (fn [[i s]] (when (str/starts-with? s "*") (inc i))) (map-indexed vector segs)) (count segs))
          segs (vec (take cut segs))
          segs (if (and (> (count segs) 1) (some #(= "" %) (pop segs))) (mapv #(if (= "" %) "c" %) segs) segs)]
      (str "/" (str/join "/" segs)))))

(def gen-path
  (gen/fmap #(str "/" (str/join "/" %)) (gen/vector (gen/elements ["a" "b" "c" "" "a%20b"]) 1 4)))

(defspec trie-agrees-with-the-priority-model 200
  (prop/for-all [templates (gen/vector gen-template 1 12) paths (gen/vector gen-path 1 10)]
    (let [templates (vals (into {} (map (juxt shape identity)) (reverse templates)))
          h (r/router (mapv (fn [t] [t {:get identity}]) templates))]
      (every? (fn [path]
                (let [ours (r/match h path)
                      ref (reference-router templates (str/replace path "%20" " "))]
                  (= (some-> ref (dissoc :rank)) (some-> ours (select-keys [:template :path-params])))))
              paths))))

;; ---------------------------------------------------------------- measurement (not a timed assertion)


(defn- regex-router
  "A naive router for comparison: one regex per route, tried in order (as clout/compojure do)."
  [templates]
  (let [compiled (mapv (fn [t] [(re-pattern (-> t (str/replace #":([a-z]+)" "([^/]+)") (str/replace #"\*([a-z]+)" "(.*)"))) t])
                       templates)]
    (fn [^String path] (some (fn [[re t]] (when (re-matches re path) t)) compiled))))

(deftest ^:benchmark router-match-figures
  (let [templates (concat (for [i (range 50)] (str "/static/route" i))
                          (for [i (range 25)] (str "/res" i "/:id"))
                          (for [i (range 25)] (str "/res" i "/:id/sub/:sub"))
                          ["/participant/:id/friends" "/files/*path"])
        h (r/router (mapv (fn [t] [t {:get (fn [_] {:status 200})}]) templates))
        trie (herald.http.impl.router/trie-of h)
        naive (regex-router templates)
        cases {"static" "/static/route49" "param" "/res24/12345" "two-params" "/res24/7/sub/x%20y"
               "wildcard" "/files/a/b/c.txt" "miss" "/nothing/here"}]
    (doseq [[label path] cases]
      (let [ours (ns-per-op 200000 #(.match ^herald.http.route.Router trie path))
            theirs (ns-per-op 20000 #(naive path))]
        (println (format "bench router-match case=%s routes=%d herald_ns=%.1f regex_list_ns=%.1f ratio=%.3f"
                         label (count templates) ours theirs (/ ours theirs)))))
    (let [req {:request-method :get :uri "/res24/12345" :headers {}}]
      (println (format "bench router-dispatch case=param herald_ns=%.1f" (ns-per-op 200000 #(h req)))))
    (is true)))
