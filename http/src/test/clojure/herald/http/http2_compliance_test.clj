(ns herald.http.http2-compliance-test
  "The Ring compliance points (ring_compliance_test.clj) asserted again over HTTP/2 streams (prior knowledge), where
  they apply: request keys, URI and query string, server name and port, protocol, methods, headers, bodies and
  limits, response bodies and headers, HEAD and the status range, async handlers."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing use-fixtures]]
            [herald.http :as http]
            [herald.http.http2-test :refer [h2 h2-client]]
            [herald.http.test-support :as ts :refer [with-server]])
  (:import (herald.http.http2 H2Client$Response)
           (java.io InputStream)))

(set! *warn-on-reflection* true)

(use-fixtures :once ts/leak-fixture)

(defn- capturing []
  (let [seen (atom [])]
    [seen (fn [req]
            (swap! seen conj (assoc req :body-class (some-> (:body req) class)
                                    :body (some-> ^InputStream (:body req) slurp)))
            {:status 200 :headers {"Content-Type" "text/plain"} :body "ok"})]))

(defn- text [^H2Client$Response r] (.text r))

(deftest ^:integration points-1-to-7-request-map
  (let [[seen h] (capturing)]
    (with-server [s h {}]
      (with-open [c (h2-client s)]
        (h2 c "GET" "/x")
        (ts/check-request-map (first @seen) s "HTTP/2.0")
        (reset! seen [])
        (doseq [path ["/a%20b/c%2Fd?x=%41&y=1+2" "/p?" "/p" "/?a" "/u%C3%A9"]]
          (h2 c "GET" path))
        (let [[a b c d e] @seen]
          (is (= "/a%20b/c%2Fd" (:uri a)))
          (is (= "x=%41&y=1+2" (:query-string a)))
          (is (= "/p" (:uri b)))
          (is (= "" (:query-string b)))
          (is (not (contains? c :query-string)))
          (is (= ["/" "a"] [(:uri d) (:query-string d)]))
          (is (= "/u%C3%A9" (:uri e))))
        (reset! seen [])
        (doseq [m ["GET" "POST" "PUT" "DELETE" "PATCH" "OPTIONS" "PURGE" "PROPFIND"]]
          (h2 c m "/" {} (when (#{"POST" "PUT" "PATCH"} m) (.getBytes "b"))))
        (is (= [:get :post :put :delete :patch :options :purge :propfind] (map :request-method @seen)))
        (reset! seen [])
        (h2 c "GET" "/" {"x-rep" ["a" "b"] "cookie" ["a=1" "b=2"]} nil)
        (let [hs (:headers (first @seen))]
          (is (every? #(= % (str/lower-case %)) (keys hs)))
          (is (= "a,b" (hs "x-rep")))
          (is (= "a=1; b=2" (hs "cookie"))))))))

(deftest ^:integration point-8-body
  (let [[seen h] (capturing)]
    (with-server [s h {:max-body-bytes 100}]
      (with-open [c (h2-client s)]
        (h2 c "POST" "/" {} (.getBytes "héllo body" "UTF-8"))
        (h2 c "POST" "/" {"content-length" "0"} (byte-array 0))
        (let [[a b] @seen]
          (is (= "héllo body" (:body a)))
          (is (isa? (:body-class a) InputStream))
          (is (contains? #{nil ""} (:body b))))
        (reset! seen [])
        (is (= 413 (.status (h2 c "POST" "/" {} (byte-array 101)))))
        (is (empty? @seen))))))

(deftest ^:integration points-9-10-11-responses-head-status-async
  (with-server [s (fn [req] (case (:uri req)
                              "/s" {:status (Long/parseLong (:query-string req)) :body "b"}
                              "/multi" {:status 200 :headers {"X-Multi" ["a" "b"]} :body "m"}
                              "/ctype" {:status 200 :headers {"content-type" "application/x-Odd;  charset=UTF-8"} :body "{}"}
                              {:status 200 :body "twelve bytes"}))
                {:error-logger (fn [_ _])}]
    (with-open [c (h2-client s)]
      (is (= ["a" "b"] (get (.headers (h2 c "GET" "/multi")) "x-multi")))
      (is (= "application/x-Odd;  charset=UTF-8" (.header (h2 c "GET" "/ctype") "content-type")))
      (let [head (h2 c "HEAD" "/")]
        (is (= "12" (.header head "content-length")))
        (is (= "" (text head))))
      (doseq [code [200 299 418 599]]
        (is (= code (.status (h2 c "GET" (str "/s?" code))))))
      (is (= 500 (.status (h2 c "GET" "/s?600"))))
      (is (= 500 (.status (h2 c "GET" "/s?99"))))))
  (with-server [s (fn [_ respond _] (future (respond {:status 200 :body "async"}))) {:async? true}]
    (with-open [c (h2-client s)]
      (is (= "async" (text (h2 c "GET" "/")))))))
