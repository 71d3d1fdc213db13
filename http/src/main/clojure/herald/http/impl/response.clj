(ns herald.http.impl.response
  "The StreamableResponseBody extension point and the hook the Java core calls for body types it does not know."
  (:import (java.io OutputStream)))

(set! *warn-on-reflection* true)

(defprotocol StreamableResponseBody
  "A response body type the server writes by calling `write-body-to-stream` on a virtual thread.
  herald writes String, byte[], ISeq, File, InputStream and nil itself; extend this protocol for anything else.
  Contract: write the body to `output-stream` and close it; the response ends when the stream is closed, which
  may happen later and from another thread (server-sent events). Each `.flush` sends what was written so far."
  (write-body-to-stream [body response output-stream]
    "Writes `body` (of `response`) to `output-stream`, then closes the stream."))

(def ^:private ring-protocol
  (delay (try (requiring-resolve 'ring.core.protocols/StreamableResponseBody)
              (catch Throwable _ nil))))

(def ^:private ring-write
  (delay (when @ring-protocol (requiring-resolve 'ring.core.protocols/write-body-to-stream))))

(defn- ring-satisfies? [body]
  (when-let [p @ring-protocol] (satisfies? @p body)))

(def body-writer
  "The Java core's hook: 1-arity answers whether a body can be written, 3-arity writes it."
  (fn
    ([body] (or (satisfies? StreamableResponseBody body) (boolean (ring-satisfies? body))))
    ([body response ^OutputStream out]
     (if (satisfies? StreamableResponseBody body)
       (write-body-to-stream body response out)
       (@@ring-write body response out)))))
