;; build/aot_jar.clj JAR PREFIX...: compiles ahead of time every Clojure namespace in the standalone jar JAR whose
;; name starts with one of PREFIX (e.g. `herald.`), with JAR itself as the classpath, and adds the classes to JAR
;; (next to the sources, which stay). Run by the feed and load modules' `package` phase after the shade plugin.
;; Why: a standalone jar that loads Clojure from source compiles ~110 namespaces at every start (the feed: ~30 s to
;; ready and ~16 s of CPU on this 2-core machine, under load); with the classes, Clojure loads them instead (RT.load
;; takes a class newer than its source). Only the standalone jars get classes: the module jars stay source-only,
;; as libraries should (a compiled library pins the Clojure it was compiled with).
;; A namespace that does not compile is named and left to load from source; the build fails only if none compiled.
(ns aot-jar
  (:import (java.net URI)
           (java.nio.file FileSystems Files LinkOption Path StandardCopyOption)
           (java.nio.file.attribute FileAttribute)
           (java.util.zip ZipEntry ZipFile)))

(set! *warn-on-reflection* true)

(defn- namespaces [^String jar prefixes]
  (with-open [z (ZipFile. jar)]
    (->> (enumeration-seq (.entries z))
         (map #(.getName ^ZipEntry %))
         (keep #(when-let [[_ p] (re-matches #"(.+)\.clj" %)] (symbol (-> ^String p (.replace \/ \.) (.replace \_ \-)))))
         (filter (fn [n] (some #(.startsWith (str n) ^String %) prefixes)))
         sort
         doall)))

(defn- compile-all!
  "Compiles the namespaces not loaded yet (a namespace loaded while compiling another was compiled with it) into
  `out`; returns the names of those that failed."
  [nss ^Path out]
  (binding [*compile-path* (str out) *compile-files* true]
    (into [] (keep (fn [n]
                     (when-not (find-ns n)
                       (try (compile n) nil
                            (catch Throwable t
                              (binding [*out* *err*]
                                (println "aot-jar: not compiled (loads from source):" n "-" (.getMessage t)))
                              n)))))
          nss)))

(defn- add-classes!
  "Copies every file under `dir` into the jar `jar` at the same relative path; returns how many."
  [^Path dir ^String jar]
  (with-open [fs (FileSystems/newFileSystem (URI/create (str "jar:" (.toUri (.toAbsolutePath (Path/of jar (make-array String 0))))))
                                            ^java.util.Map (hash-map))]
    (let [files (with-open [s (Files/walk dir (make-array java.nio.file.FileVisitOption 0))]
                  (into [] (filter #(Files/isRegularFile % (make-array LinkOption 0))) (iterator-seq (.iterator s))))]
      (doseq [^Path f files
              :let [^Path target (.getPath ^java.nio.file.FileSystem fs (str (.relativize dir f)) (make-array String 0))]]
        (when-let [parent (.getParent target)] (Files/createDirectories parent (make-array FileAttribute 0)))
        (Files/copy f target ^"[Ljava.nio.file.CopyOption;" (into-array java.nio.file.CopyOption [StandardCopyOption/REPLACE_EXISTING])))
      (count files))))

(let [[jar & prefixes] *command-line-args*
      _ (when (or (nil? jar) (empty? prefixes))
          (binding [*out* *err*] (println "usage: aot_jar.clj JAR PREFIX..."))
          (System/exit 2))
      t0 (System/nanoTime)
      nss (namespaces jar prefixes)
      out (Files/createTempDirectory "aot-jar" (make-array FileAttribute 0))
      failed (compile-all! nss out)
      n (add-classes! out jar)]
  (with-open [s (Files/walk out (make-array java.nio.file.FileVisitOption 0))]
    (run! #(Files/delete %) (reverse (iterator-seq (.iterator s)))))
  (println (format "aot-jar: %s: %d namespaces, %d not compiled, %d classes added in %.1f s"
                   jar (count nss) (count failed) n (/ (- (System/nanoTime) t0) 1e9)))
  (System/exit (if (and (seq nss) (= (count failed) (count nss))) 1 0)))
