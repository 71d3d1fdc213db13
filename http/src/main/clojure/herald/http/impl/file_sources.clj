(ns herald.http.impl.file-sources
  "Where static assets come from: a request path made safe (decoded segments, no traversal), a root directory
  (symlinks leaving it refused unless allowed) or a classpath prefix (directories and jar entries, read in place),
  and the content-type table."
  (:require [clojure.string :as str])
  (:import (herald.http.codec PercentDecoder)
           (java.io File InputStream)
           (java.net JarURLConnection URL)
           (java.nio.file Files LinkOption NoSuchFileException Path)
           (java.nio.file.attribute BasicFileAttributes)
           (java.util.jar JarEntry)))

(set! *warn-on-reflection* true)

(def content-types
  "File extension (lower case, no dot) -> Content-Type of the built-in table; `:content-types` extends it."
  {"html" "text/html; charset=utf-8" "htm" "text/html; charset=utf-8" "css" "text/css; charset=utf-8"
   "js" "text/javascript; charset=utf-8" "mjs" "text/javascript; charset=utf-8"
   "json" "application/json" "map" "application/json" "txt" "text/plain; charset=utf-8"
   "md" "text/markdown; charset=utf-8" "csv" "text/csv; charset=utf-8" "xml" "application/xml"
   "svg" "image/svg+xml" "png" "image/png" "jpg" "image/jpeg" "jpeg" "image/jpeg" "gif" "image/gif"
   "webp" "image/webp" "avif" "image/avif" "ico" "image/x-icon" "bmp" "image/bmp"
   "woff" "font/woff" "woff2" "font/woff2" "ttf" "font/ttf" "otf" "font/otf"
   "wasm" "application/wasm" "pdf" "application/pdf" "zip" "application/zip" "gz" "application/gzip"
   "tar" "application/x-tar" "mp4" "video/mp4" "webm" "video/webm" "mp3" "audio/mpeg" "ogg" "audio/ogg"
   "wav" "audio/wav" "webmanifest" "application/manifest+json" "wgsl" "text/wgsl"})

(defn content-type
  "The Content-Type for file `name` from `table`, application/octet-stream for an unknown extension."
  [table ^String name]
  (let [dot (.lastIndexOf name ".")]
    (or (when (pos? dot) (table (str/lower-case (subs name (inc dot)))))
        "application/octet-stream")))

(defn- bad-segment? [^String s dotfiles?]
  (or (= "" s) (= "." s) (= ".." s)
      (and (not dotfiles?) (.startsWith s "."))
      (some (fn [^Character c] (let [c (.charValue c)] (or (= c \/) (= c \\) (< (int c) 32) (= (int c) 127)
                                                           (= c \uFFFD))))
            s)))

(defn segments
  "The decoded path segments of raw `path` (the part of :uri after the handler's prefix, leading `/` dropped),
  or nil when the path may not name an asset: an empty, `.` or `..` segment (also percent-encoded), an encoded
  `/`, a backslash, a NUL or other control character, an invalid UTF-8 escape, a dot-file unless `dotfiles?`.
  A trailing `/` gives a last segment of nil (a directory asked for as one)."
  [^String path dotfiles?]
  (let [dir? (.endsWith path "/")
        raw (if dir? (subs path 0 (dec (count path))) path)
        segs (if (= "" raw) [] (mapv #(PercentDecoder/decodePath %) (str/split raw #"/" -1)))]
    (when-not (some #(bad-segment? % dotfiles?) segs)
      segs)))

;; ---- assets: {:name String :length long :modified ms :file File | :open (fn [] InputStream) :id String} ----

(defn- file-asset [^File f ^BasicFileAttributes a]
  {:name (.getName f) :length (.size a) :modified (.toMillis (.lastModifiedTime a)) :file f})

(defn- attrs ^BasicFileAttributes [^Path p]
  (try (Files/readAttributes p BasicFileAttributes ^"[Ljava.nio.file.LinkOption;" (make-array LinkOption 0))
       (catch java.io.IOException _ nil)))

(defn- inside? [^Path real-root ^Path p follow?]
  (or follow?
      (try (.startsWith (.toRealPath p (make-array LinkOption 0)) real-root)
           (catch NoSuchFileException _ false)
           (catch java.io.IOException _ false))))

(defn dir-source
  "Looks up assets under directory `root`: `(lookup segs)` -> {:dir? true} for a directory, an asset, or nil.
  With `follow-symlinks?` false, a path whose real location is outside the root's is not found."
  [root follow-symlinks?]
  (let [^Path root-path (.normalize (.toAbsolutePath (.toPath (File. (str root)))))
        real-root (try (.toRealPath root-path (make-array LinkOption 0))
                       (catch java.io.IOException e
                         (throw (ex-info (str "herald.http/files: root " root " is not a readable directory")
                                         {:type :herald.http/invalid-option :key :root :value root} e))))]
    (when-not (Files/isDirectory real-root (make-array LinkOption 0))
      (throw (ex-info (str "herald.http/files: root " root " is not a directory")
                      {:type :herald.http/invalid-option :key :root :value root})))
    (fn lookup [segs]
      (let [^Path p (reduce (fn [^Path p ^String s] (.resolve p s)) root-path segs)]
        (when (and (.startsWith p root-path) (inside? real-root p follow-symlinks?))
          (when-let [a (attrs p)]
            (cond (.isDirectory a) {:dir? true}
                  (.isRegularFile a) (file-asset (.toFile p) a))))))))

(defn- jar-asset [^URL url ^String name]
  (let [^JarURLConnection conn (.openConnection url)
        ^JarEntry e (.getJarEntry conn)]
    (cond (nil? e) nil
          (.isDirectory e) {:dir? true}
          :else {:name name :length (.getSize e) :modified (.getTime e) :crc (.getCrc e)
                 :open (fn [] (.getInputStream (.openConnection url)))})))

(defn resource-source
  "Looks up assets under classpath `prefix` with `loader`: files on a directory classpath entry are served as
  files (zero-copy), entries of a jar are read from the jar in place (nothing extracted to disk)."
  [^String prefix ^ClassLoader loader]
  (let [prefix (str/replace prefix #"^/+|/+$" "")]
    (fn lookup [segs]
      (let [path (str/join "/" (cond->> segs (not= "" prefix) (cons prefix)))
            ^URL url (when-not (= "" path) (.getResource loader path))]
        (when url
          (case (.getProtocol url)
            "file" (let [f (File. (.toURI url))
                         a (attrs (.toPath f))]
                     (cond (nil? a) nil
                           (.isDirectory a) {:dir? true}
                           (.isRegularFile a) (file-asset f a)))
            "jar" (try (jar-asset url (or (last segs) ""))
                       (catch java.io.IOException _ nil))
            nil))))))

(defn open-stream
  "An InputStream over the whole of `asset`."
  ^InputStream [asset]
  (if-let [^File f (:file asset)]
    (java.io.FileInputStream. f)
    ((:open asset))))
