(ns herald.feed.health-reserve-test
  "The feed keeps herald.http's health-probe reserve on (config.edn): with every connection taken, a probe of /health
  or /ready on one more connection is answered, any other request there is the feed's JSON 503."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.test-util :as tu])
  (:import (java.io BufferedReader InputStreamReader)
           (java.net Socket)
           (java.nio.charset StandardCharsets)))

(set! *warn-on-reflection* true)

(defn- exchange
  "Sends a GET of `path` on socket `s` and reads one answer: [status body]."
  [^Socket s path]
  (let [out (.getOutputStream s)]
    (.write out (.getBytes (str "GET " path " HTTP/1.1\r\nHost: x\r\n\r\n") StandardCharsets/US_ASCII))
    (.flush out))
  (let [in (BufferedReader. (InputStreamReader. (.getInputStream s) StandardCharsets/UTF_8))
        status (Long/parseLong (second (str/split (.readLine in) #" ")))
        headers (loop [h {}]
                  (let [l (.readLine in)]
                    (if (str/blank? l) h
                        (let [i (.indexOf l ":")]
                          (recur (assoc h (str/lower-case (subs l 0 i)) (str/trim (subs l (inc i)))))))))
        n (Long/parseLong (get headers "content-length" "0"))
        body (char-array n)]
    (loop [off 0] (when (< off n) (recur (+ off (.read in body off (- n off))))))
    [status (String. body)]))

(defn- connect ^Socket [port]
  (doto (Socket. "127.0.0.1" (int port)) (.setSoTimeout 10000)))

(deftest health-probes-are-answered-when-the-server-is-full
  (let [sys (tu/start-feed! nil {:http {:max-connections 2}})
        port (feed/port sys)
        held (vec (repeatedly 2 #(connect port)))]
    (try
      (doseq [s held] (is (= 200 (first (exchange s "/health"))) "the two connections of the limit work"))
      (testing "one more connection: a health probe is answered"
        (with-open [s (connect port)]
          (let [[status body] (exchange s "/ready")]
            (is (= 200 status))
            (is (str/includes? body "\"ready\"")))))
      (testing "any other request on a reserve connection is the feed's JSON 503"
        (with-open [s (connect port)]
          (let [[status body] (exchange s "/participant/1")]
            (is (= 503 status))
            (is (str/starts-with? body "{\"error\"") body))))
      (finally
        (run! #(.close ^Socket %) held)
        (feed/stop! sys)))))
