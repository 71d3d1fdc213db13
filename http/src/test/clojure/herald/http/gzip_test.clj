(ns herald.http.gzip-test
  "wrap-gzip: negotiation, eligibility, header rewriting, both arities."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.http.middleware :as mw])
  (:import (java.io ByteArrayInputStream)
           (java.util.zip GZIPInputStream)))

(set! *warn-on-reflection* true)

(def ^String big (apply str (repeat 200 "Hello, gzip! ")))

(defn- gunzip [^bytes b] (slurp (GZIPInputStream. (ByteArrayInputStream. b)) :encoding "UTF-8"))

(defn- run [resp & [accept opts]]
  ((mw/wrap-gzip (constantly resp) (or opts {})) {:headers (if accept {"accept-encoding" accept} {})}))

(def text {"Content-Type" "text/plain; charset=utf-8"})

(deftest compresses-when-accepted
  (let [resp (run {:status 200 :headers (assoc text "Content-Length" "2600" "ETag" "\"v1\"") :body big} "gzip, br")]
    (is (= "gzip" (get-in resp [:headers "Content-Encoding"])))
    (is (= "Accept-Encoding" (get-in resp [:headers "Vary"])))
    (is (nil? (get-in resp [:headers "Content-Length"])) "the server computes the new length")
    (is (= "W/\"v1\"" (get-in resp [:headers "ETag"])))
    (is (< (alength ^bytes (:body resp)) 200))
    (is (= big (gunzip (:body resp)))))
  (testing "byte[] bodies and Latin-1 strings"
    (let [resp (run {:status 200 :headers {"content-type" "application/json"} :body (.getBytes ^String big "UTF-8")} "*")]
      (is (= big (gunzip (:body resp)))))
    (let [s (apply str (repeat 300 "été "))
          resp (run {:status 200 :headers {"Content-Type" "text/plain; charset=ISO-8859-1"} :body s} "gzip")]
      (is (= s (slurp (GZIPInputStream. (ByteArrayInputStream. (:body resp))) :encoding "ISO-8859-1"))))))

(deftest left-alone
  (testing "client does not accept gzip: same body, but Vary"
    (doseq [accept [nil "identity" "gzip;q=0" "br"]]
      (let [resp (run {:status 200 :headers text :body big} accept)]
        (is (= big (:body resp)) (str accept))
        (is (= "Accept-Encoding" (get-in resp [:headers "Vary"]))))))
  (testing "ineligible responses are untouched"
    (doseq [resp [{:status 200 :headers text :body "small"}
                  {:status 200 :headers {"Content-Type" "image/png"} :body big}
                  {:status 200 :headers {} :body big}
                  {:status 200 :headers (assoc text "Content-Encoding" "br") :body big}
                  {:status 204 :headers text :body big}
                  {:status 304 :headers text :body big}
                  {:status 206 :headers text :body big}
                  {:status 200 :headers text :body (list big)}
                  {:status 200 :headers {"Content-Type" "text/event-stream"} :body (ByteArrayInputStream. (.getBytes ^String big))}
                  {:status 200 :headers text :body nil}]]
      (is (= resp (run resp "gzip")) (pr-str (:status resp) (:headers resp) (type (:body resp))))))
  (is (nil? (run nil "gzip")) "a nil response passes"))

(deftest streams-and-files
  (let [resp (run {:status 200 :headers (assoc text "Content-Length" "2600") :body (ByteArrayInputStream. (.getBytes big "UTF-8"))} "gzip")]
    (is (= "gzip" (get-in resp [:headers "Content-Encoding"])))
    (is (nil? (get-in resp [:headers "Content-Length"])))
    (is (instance? java.io.InputStream (:body resp)) "compressed as the server reads it")
    (is (= big (slurp (GZIPInputStream. ^java.io.InputStream (:body resp)) :encoding "UTF-8"))))
  (let [f (java.io.File/createTempFile "herald-gzip" ".txt")]
    (try
      (spit f big)
      (let [resp (run {:status 200 :headers {"Content-Type" "text/html"} :body f} "gzip")]
        (is (= "gzip" (get-in resp [:headers "Content-Encoding"])))
        (with-open [in (GZIPInputStream. ^java.io.InputStream (:body resp))] (is (= big (slurp in)))))
      (spit f "tiny")
      (is (= f (:body (run {:status 200 :headers {"Content-Type" "text/html"} :body f} "gzip"))) "small files stay")
      (finally (.delete f))))
  (let [s (ByteArrayInputStream. (.getBytes big "UTF-8"))
        resp {:status 200 :headers text :body s}]
    (is (= resp (run resp "gzip" {:streams? false})) "streams? false leaves streams alone")
    (is (= big (:body (run {:status 200 :headers text :body big} "identity"))))))

(deftest options
  (is (= "gzip" (get-in (run {:status 200 :headers text :body "small"} "gzip" {:min-bytes 0}) [:headers "Content-Encoding"])))
  (is (= "gzip" (get-in (run {:status 200 :headers {"Content-Type" "image/png"} :body big} "gzip" {:compress? any?})
                        [:headers "Content-Encoding"])))
  (is (= big (gunzip (:body (run {:status 200 :headers text :body big} "gzip" {:level 1}))))))

(deftest vary-is-merged
  (is (= "Origin, Accept-Encoding" (get-in (run {:status 200 :headers (assoc text "Vary" "Origin") :body big} "gzip")
                                           [:headers "Vary"])))
  (is (= "accept-encoding" (get-in (run {:status 200 :headers (assoc text "vary" "accept-encoding") :body big} "gzip")
                                   [:headers "vary"]))))

(deftest async-arity
  (let [h (mw/wrap-gzip (fn [_ respond _] (future (respond {:status 200 :headers text :body big}))))
        p (promise)]
    (h {:headers {"accept-encoding" "gzip"}} p p)
    (is (= big (gunzip (:body (deref p 30000 nil)))))))
