(ns herald.feed.body-input-test
  "Request bodies from a client's view: a chunked body over the limit gets the same JSON 413 as a declared one
  (QA Q22), a repeated JSON key is a 400 as a repeated form key is (Q2), malformed JSON names the body (Q3)."
  (:require [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.feed :as feed]
            [herald.feed.test-util :as u]
            [herald.json :as json])
  (:import (java.io ByteArrayInputStream)
           (java.net URI)
           (java.net.http HttpClient HttpRequest HttpRequest$BodyPublishers HttpResponse HttpResponse$BodyHandlers)
           (java.nio.charset StandardCharsets)
           (java.time Duration)
           (java.util.function Supplier)))

(set! *warn-on-reflection* true)

(def ^:dynamic *base* nil)
(def ^:private limit 65536)

(use-fixtures :once
  (fn [t]
    (let [sys (u/start-feed! nil {:feed {:max-body-bytes limit}})]
      (try (binding [*base* (feed/url sys)] (t))
           (finally (feed/stop! sys))))))

(defn- post-chunked
  "POSTs `text` as a body without Content-Length (Transfer-Encoding: chunked); {:status :json}."
  ([path text] (post-chunked path text "application/json"))
  ([path ^String text ^String content-type]
  (let [bytes (.getBytes text StandardCharsets/UTF_8)
        req (-> (HttpRequest/newBuilder (URI/create (str *base* path)))
                (.timeout (Duration/ofSeconds 30))
                (.header "Content-Type" content-type)
                (.POST (HttpRequest$BodyPublishers/ofInputStream
                        (reify Supplier (get [_] (ByteArrayInputStream. bytes)))))
                (.build))
        ^HttpResponse resp (.send u/client req (HttpResponse$BodyHandlers/ofString))]
    {:status (.statusCode resp) :json (json/read (str (.body resp)))})))

(defn- participant! [] (get-in (u/request *base* "/participant" :method :post :json {:name "b"}) [:json "id"]))

(deftest a-chunked-body-over-the-limit-is-a-json-413
  (let [id (participant!)
        big (json/write-str {:subject "big" :story (apply str (repeat (* 2 limit) "x"))})
        small (json/write-str {:subject "small" :story "fits"})]
    (testing "declared and chunked bodies over the limit get the same answer"
      (let [declared (u/request *base* (str "/participant/" id "/outbound") :method :post :body big
                                :content-type "application/json")
            chunked (post-chunked (str "/participant/" id "/outbound") big)]
        (is (= 413 (:status declared) (:status chunked)))
        (is (= "body" (get-in declared [:json "field"]) (get-in chunked [:json "field"])))))
    (testing "a chunked body under the limit is served, and nothing of the refused one was stored"
      (is (= 200 (:status (post-chunked (str "/participant/" id "/outbound") small))))
      (is (= ["small"] (mapv #(get % "subject") (:json (u/request *base* (str "/participant/" id "/outbound")))))))))

(deftest a-form-body-over-the-limit-is-the-same-json-413
  (let [form "application/x-www-form-urlencoded"
        big (str "name=x&pad=" (apply str (repeat (* 2 limit) "a")))]
    (testing "declared and chunked form bodies over the feed's limit get the feed's JSON 413 naming the body (QA3 Q1)"
      (let [declared (u/request *base* "/participant" :method :post :body big :content-type form)
            chunked (post-chunked "/participant" big form)]
        (is (= 413 (:status declared) (:status chunked)))
        (is (= "body" (get-in declared [:json "field"]) (get-in chunked [:json "field"])))
        (is (re-find #"exceeds the limit of 65536 bytes" (str (get-in declared [:json "error"]))))))
    (testing "a form body under the limit is served"
      (let [r (u/request *base* "/participant" :method :post :body "name=formed" :content-type form)]
        (is (= 200 (:status r)))
        (is (= "formed" (get-in r [:json "name"])))))))

(deftest repeated-keys-and-malformed-json-name-the-field
  (testing "a repeated JSON key is a 400 as a repeated form key is"
    (let [json (u/request *base* "/participant" :method :post :body "{\"name\":\"x\",\"name\":\"y\"}"
                          :content-type "application/json")
          form (u/request *base* "/participant" :method :post :body "name=a&name=b"
                          :content-type "application/x-www-form-urlencoded")]
      (is (= 400 (:status json) (:status form)))
      (is (re-find #"duplicate key" (get-in json [:json "error"])))
      (is (= "name" (get-in form [:json "field"])))))
  (testing "malformed JSON names the body"
    (let [r (u/request *base* "/participant" :method :post :body "{\"name\":\"x\"" :content-type "application/json")]
      (is (= 400 (:status r)))
      (is (= "body" (get-in r [:json "field"]))))))

(deftest the-servers-own-answers-are-json-errors-too
  ;; above :http :max-body-bytes herald.http answers before the feed sees the request; its :error-response hook
  ;; makes that answer the feed's JSON error, like every other (issue 13)
  (let [sys (u/start-feed! nil {:feed {:max-body-bytes limit} :http {:max-body-bytes (* 2 limit)}})
        base (feed/url sys)]
    (try
      (let [big (json/write-str {:name (apply str (repeat (* 4 limit) "x"))})
            r (u/request base "/participant" :method :post :body big :content-type "application/json")]
        (is (= 413 (:status r)))
        (is (re-find #"application/json" (str (get-in r [:headers "content-type"]))))
        (is (= "body" (get-in r [:json "field"])))
        (is (string? (get-in r [:json "error"])) (:body r)))
      (let [r (u/request base (str "/participant/1?" (apply str (repeat 20000 "a"))))]
        (is (#{414 431} (:status r)) (str (:status r)))
        (is (re-find #"application/json" (str (get-in r [:headers "content-type"]))))
        (is (string? (get-in r [:json "error"])) (:body r)))
      (finally (feed/stop! sys)))))
