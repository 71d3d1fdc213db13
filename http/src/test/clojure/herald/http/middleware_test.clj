(ns herald.http.middleware-test
  "JSON middleware (content types, keywords, malformed bodies, both arities) and the whole stack on a server."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.http :as http]
            [herald.json :as json]
            [herald.http.middleware :as mw]
            [herald.http.router :as r])
  (:import (java.io ByteArrayInputStream)
           (java.net URI)
           (java.net.http HttpClient HttpRequest HttpRequest$BodyPublishers HttpResponse HttpResponse$BodyHandlers)
           (java.time Duration)
           (java.util.zip GZIPInputStream)))

(set! *warn-on-reflection* true)

(defn- req [body ct & [charset]]
  {:request-method :post :uri "/" :headers (if ct {"content-type" ct} {})
   :body (when body (ByteArrayInputStream. (.getBytes ^String body (str (or charset "UTF-8")))))})

(def ^:private body-of (fn [r] {:status 200 :body (:body r)}))

(deftest json-bodies-are-parsed
  (let [h (mw/wrap-json-body body-of)
        hk (mw/wrap-json-body body-of {:keywords? true :bigdecimals? true})]
    (is (= {"a" [1 2.5 nil] "b/c" true} (:body (h (req "{\"a\":[1,2.5,null],\"b/c\":true}" "application/json")))))
    (is (= {:a 0.1M :b/c "é"} (:body (hk (req "{\"a\":0.1,\"b/c\":\"é\"}" "application/json; charset=UTF-8")))))
    (is (= [1] (:body (h (req "[1]" "application/vnd.api+json")))) "+json media types")
    (is (= "é" (:body (h (req "\"é\"" "application/json; charset=ISO-8859-1" "ISO-8859-1")))) "declared charset")
    (is (nil? (:body (h (req "" "application/json")))) "empty body -> nil")
    (is (nil? (:body (h (req nil "application/json")))) "no body -> nil")
    (is (= {:parsed 1} (:body (h (assoc (req nil "application/json") :body {:parsed 1}))))
        "a body parsed by an outer middleware is left alone")
    (is (= {"b" 1} (:body (h (assoc (req nil "application/json") :body (.getBytes "{\"b\":1}"))))))))

(deftest other-content-types-are-left-alone
  (let [h (mw/wrap-json-body (fn [r] {:status 200 :body (slurp (:body r))}))]
    (is (= "{not json" (:body (h (req "{not json" "text/plain")))))
    (is (= "{not json" (:body (h (req "{not json" nil)))))
    (is (= "{not json" (:body (h (req "{not json" "application/jsonx")))))))

(deftest malformed-json-is-a-400-with-a-json-error
  (let [called (atom false)
        h (mw/wrap-json-body (fn [_] (reset! called true) {:status 200}))]
    (doseq [bad ["{" "{\"a\":1} trailing" "[1,]" "\"\\q\"" (apply str (repeat 2000 "["))]]
      (let [resp (h (req bad "application/json"))
            err (get (json/read (:body resp)) "error")]
        (is (= 400 (:status resp)) bad)
        (is (= "application/json; charset=utf-8" (get-in resp [:headers "Content-Type"])))
        (is (.startsWith ^String err "malformed JSON: ") err)
        (is (not (re-find #"Source|StreamReadConstraints|Exception" err)) err)))
    (is (false? @called) "the handler never sees a malformed body"))
  (let [h (mw/wrap-json-body body-of {:malformed-response (fn [_ ex] {:status 422 :body (:line (ex-data ex))})})]
    (is (= {:status 422 :body 2} (h (req "{\n x}" "application/json"))))))

(deftest json-responses-are-encoded
  (let [h (mw/wrap-json-response (fn [r] (:resp r)))
        run (fn [resp] (h {:resp resp}))]
    (let [resp (run {:status 200 :body {:a [1 :b #{"c"}]}})]
      (is (= "{\"a\":[1,\"b\",[\"c\"]]}" (String. ^bytes (:body resp) "UTF-8")))
      (is (= "application/json; charset=utf-8" (get-in resp [:headers "Content-Type"]))))
    (is (= "[1,2]" (String. ^bytes (:body (run {:status 200 :body '(1 2)})) "UTF-8")))
    (is (= {"content-type" "application/vnd.x+json"}
           (:headers (run {:status 200 :headers {"content-type" "application/vnd.x+json"} :body [1]})))
        "a user's Content-Type is kept, whatever its case")
    (doseq [body ["text" nil (byte-array 2) (ByteArrayInputStream. (byte-array 0))]]
      (is (identical? body (:body (run {:status 200 :body body})))))
    (is (= "{\n  \"a\" : 1\n}" (.replace (String. ^bytes (:body ((mw/wrap-json-response (constantly {:status 200 :body {:a 1}})
                                                                 {:pretty? true}) {})) "UTF-8") "\r" "")))
    (is (= :herald.json/unencodable
           (:type (ex-data (try (run {:status 200 :body {:a (Object.)}}) (catch Exception e e))))))
    (is (= "{\"userId\":1}" (String. ^bytes (:body ((mw/wrap-json-response (constantly {:status 200 :body {:user-id 1}})
                                                                        {:key-fn (fn [k] (if (= k :user-id) "userId" (name k)))}) {}))
                                         "UTF-8")))))

(deftest both-arities
  (let [h (-> (fn [r respond _] (respond {:status 200 :body {:got (:body r)}}))
              (mw/wrap-json-body {:keywords? true})
              mw/wrap-json-response)
        run (fn [r] (let [p (promise)] (h r p p) (deref p 30000 :timeout)))]
    (is (= "{\"got\":{\"x\":1}}" (String. ^bytes (:body (run (req "{\"x\":1}" "application/json"))) "UTF-8")))
    (is (= 400 (:status (run (req "{" "application/json"))))))
  (testing "an encoding failure goes to raise, and respond is not called"
    (let [h (mw/wrap-json-response (fn [_ respond _] (respond {:status 200 :body {:a (Object.)}})))
          responded (atom 0)
          raised (promise)]
      (h {} (fn [_] (swap! responded inc)) raised)
      (is (= :herald.json/unencodable (:type (ex-data (deref raised 30000 nil)))))
      (is (zero? @responded)))))

(deftest options-are-validated
  (doseq [[f opts k] [[mw/wrap-json-body {:keywords? "yes"} :keywords?]
                      [mw/wrap-json-body {:max-depth -1} :max-depth]
                      [mw/wrap-json-body {:keyword? true} :keyword?]
                      [mw/wrap-json-response {:pretty true} :pretty]
                      [mw/wrap-gzip {:level 11} :level]]]
    (let [d (try (f identity opts) nil (catch clojure.lang.ExceptionInfo e (ex-data e)))]
      (is (= [:herald.http/invalid-option k] [(:type d) (:key d)]) (pr-str opts)))))

;; ---------------------------------------------------------------- the whole stack on herald's server

(defn- dual [f] (fn ([req] (f req)) ([req respond _] (future (respond (f req))))))

(defn- app []
  (-> (r/router [["/participant" {:post (dual (fn [req] {:status 201 :body {:created (:body req)}}))}]
                 ["/participant/:id" {:get (dual
                                            (fn [req] {:status 200 :body {:id (get-in req [:path-params :id])
                                                                          :q (:query-params req)
                                                                          :pad (apply str (repeat 100 "x"))}}))}]
                 ["/big" {:get (dual (fn [_] {:status 200 :body {:items (vec (range 2000))}}))}]
                 ["/stream" {:get (dual (fn [_] {:status 200 :headers {"Content-Type" "text/plain"}
                                                 :body (ByteArrayInputStream. (.getBytes ^String (apply str (repeat 5000 "stream ")) "UTF-8"))}))}]])
      (mw/wrap-json-body {:keywords? true})
      mw/wrap-json-response
      mw/wrap-params
      mw/wrap-gzip))

(defn- send! ^HttpResponse [port method path headers ^String body]
  (let [b (-> (HttpRequest/newBuilder (URI/create (str "http://127.0.0.1:" port path)))
              (.timeout (Duration/ofSeconds 60))
              (.method method (if body (HttpRequest$BodyPublishers/ofString body) (HttpRequest$BodyPublishers/noBody))))]
    (doseq [[k v] headers] (.header b k v))
    (.send (HttpClient/newHttpClient) (.build b) (HttpResponse$BodyHandlers/ofByteArray))))

(defn- text [^HttpResponse r] (String. ^bytes (.body r) "UTF-8"))
(defn- hdr [^HttpResponse r ^String k] (.orElse (.firstValue (.headers r) k) nil))

(defn- check-stack [port]
  (let [r (send! port "POST" "/participant" {"Content-Type" "application/json"} "{\"name\":\"Jörg\",\"tags\":[1,2]}")]
    (is (= 201 (.statusCode r)))
    (is (= "application/json; charset=utf-8" (hdr r "content-type")))
    (is (= {"created" {"name" "Jörg" "tags" [1 2]}} (json/read (.body r)))))
  (let [r (send! port "GET" "/participant/caf%C3%A9?x=1&x=2" {} nil)]
    (is (= {"id" "café" "q" {"x" ["1" "2"]}} (dissoc (json/read (.body r)) "pad")))
    (testing "HEAD: the GET route, no body, the same Content-Length"
      (let [h (send! port "HEAD" "/participant/caf%C3%A9?x=1&x=2" {} nil)]
        (is (= 200 (.statusCode h)))
        (is (zero? (alength ^bytes (.body h))))
        (is (= (str (alength ^bytes (.body r))) (hdr h "content-length"))))))
  (let [r (send! port "OPTIONS" "/participant/1" {} nil)]
    (is (= [204 "GET, HEAD, OPTIONS"] [(.statusCode r) (hdr r "allow")])))
  (let [r (send! port "PUT" "/participant/1" {} nil)]
    (is (= [405 "GET, HEAD, OPTIONS"] [(.statusCode r) (hdr r "allow")])))
  (is (= 404 (.statusCode (send! port "GET" "/nope" {} nil))))
  (let [r (send! port "POST" "/participant" {"Content-Type" "application/json"} "{\"name\":")]
    (is (= 400 (.statusCode r)))
    (is (str/starts-with? (get (json/read (.body r)) "error") "malformed JSON: ")))
  (let [r (send! port "GET" "/big" {"Accept-Encoding" "gzip"} nil)]
    (is (= "gzip" (hdr r "content-encoding")))
    (is (= (vec (range 2000)) (get (json/read (GZIPInputStream. (ByteArrayInputStream. (.body r)))) "items"))))
  (let [r (send! port "GET" "/stream" {"Accept-Encoding" "gzip"} nil)]
    (is (= "gzip" (hdr r "content-encoding")) "an InputStream body is compressed as it is sent")
    (is (= (apply str (repeat 5000 "stream ")) (slurp (GZIPInputStream. (ByteArrayInputStream. (.body r))))))))

(deftest ^:integration the-stack-on-herald
  (let [srv (http/start-server (app) {:port 0 :host "127.0.0.1"})]
    (try (check-stack (http/server-port srv)) (finally @(http/stop-server srv))))
  (testing "async handlers"
    (let [srv (http/start-server (app) {:port 0 :host "127.0.0.1" :async? true})]
      (try (check-stack (http/server-port srv)) (finally @(http/stop-server srv))))))
