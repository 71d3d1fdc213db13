(ns herald.http.impl.router-paths
  "Reverse routing: route names indexed at construction, paths built from a template and params."
  (:require [clojure.string :as str])
  (:import (herald.http.route Route RouteTemplate$Kind RouteTemplate$Segment Router)
           (java.nio.charset StandardCharsets)))

(set! *warn-on-reflection* true)

(defn name-index
  "name -> Route for the named routes of `trie`; two routes with one name -> ex-info."
  [^Router trie]
  (reduce (fn [m ^Route r]
            (let [n (.name r)]
              (cond (nil? n) m
                    (contains? m n)
                    (throw (ex-info (str "route name " n " is used by \"" (.template ^Route (m n)) "\" and \""
                                         (.template r) "\"")
                                    {:type :herald.http/duplicate-route-name :name n
                                     :routes [(.template ^Route (m n)) (.template r)]}))
                    :else (assoc m n r))))
          {} (.routes trie)))

(defn- unreserved? [^long b]
  (or (<= 0x61 b 0x7a) (<= 0x41 b 0x5a) (<= 0x30 b 0x39) (#{0x2d 0x2e 0x5f 0x7e} b)))

(defn encode-segment
  "Percent-encodes `s` (UTF-8) for use as one path segment: everything but unreserved characters."
  ^String [^String s]
  (let [sb (StringBuilder.)]
    (doseq [b (.getBytes s StandardCharsets/UTF_8)]
      (let [b (bit-and (long b) 0xff)]
        (if (unreserved? b) (.append sb (char b)) (.append sb (format "%%%02X" b)))))
    (str sb)))

(defn- param-value [^Route r params ^String pname]
  (let [v (get params (keyword pname))]
    (when (nil? v)
      (throw (ex-info (str "path-for \"" (.template r) "\" needs the parameter :" pname)
                      {:type :herald.http/missing-path-param :template (.template r) :param (keyword pname)})))
    (str v)))

(defn path
  "The path of route `r` with `params` (keyword -> value, `str`-ed and percent-encoded; a wildcard keeps
  its `/`s)."
  ^String [^Route r params]
  (str "/"
       (str/join "/" (for [^RouteTemplate$Segment s (.segments (.parsed r))]
                       (condp = (.kind s)
                         RouteTemplate$Kind/STATIC (encode-segment (.text s))
                         RouteTemplate$Kind/PARAM (encode-segment (param-value r params (.text s)))
                         RouteTemplate$Kind/WILDCARD (str/join "/" (map encode-segment
                                                                        (str/split (param-value r params (.text s)) #"/" -1))))))))
