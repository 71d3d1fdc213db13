(ns herald.http.oas-check
  "Test helper: validates an OpenAPI 3.1 document against the official OAS 3.1 JSON Schema (schema-base, which
  also checks every Schema Object) with com.networknt:json-schema-validator, offline."
  (:require [clojure.java.io :as io]
            [herald.http :as http]
            [herald.json :as json])
  (:import (com.networknt.schema InputFormat Schema SchemaLocation SchemaRegistry SchemaRegistry$Builder
                                 SpecificationVersion)
           (java.util.function Consumer)))

(set! *warn-on-reflection* true)

(def ^:private files
  "$id -> file name under oas-3.1/ (http's test resources)."
  {"https://spec.openapis.org/oas/3.1/schema/2022-10-07" "schema.json"
   "https://spec.openapis.org/oas/3.1/schema-base/2022-10-07" "schema-base.json"
   "https://spec.openapis.org/oas/3.1/dialect/base" "dialect-base.json"
   "https://spec.openapis.org/oas/3.1/meta/base" "meta-base.json"})

(defn- slurp-schema
  "A schema file from the classpath (http's tests) or, from another module (the feed's tests), http's source tree."
  [f]
  (slurp (or (io/resource (str "oas-3.1/" f))
             (io/file "../http/src/test/resources/oas-3.1" f))))

(def ^:private schema
  (delay
    (let [texts (into {} (for [[id f] files] [id (slurp-schema f)]))
          registry (SchemaRegistry/withDefaultDialect
                    SpecificationVersion/DRAFT_2020_12
                    (reify Consumer (accept [_ b] (.schemas ^SchemaRegistry$Builder b ^java.util.Map texts))))]
      (.getSchema registry (SchemaLocation/of "https://spec.openapis.org/oas/3.1/schema-base/2022-10-07")))))

(defn problems
  "The validation errors of `doc` (a Clojure map, written as JSON first) as strings; empty when valid."
  [doc]
  (mapv (fn [^com.networknt.schema.Error e] (str (.getInstanceLocation e) ": " (.getMessage e)))
        (.validate ^Schema @schema ^String (json/write-str doc) InputFormat/JSON)))
