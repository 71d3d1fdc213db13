#!/usr/bin/env bash
# Checks the root deps.edn against the poms: every alias's direct Maven dependencies and versions, every path,
# and (with tools.deps, which this script gets from Maven Central like any dependency) every jar the Clojure CLI
# would put on the classpath against Maven's runtime classpath. Exit 0 when they match. Not part of `make test`
# (it compiles every module); run it after changing a pom or deps.edn: build/check-deps-edn.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export JAVA_HOME="${JAVA_HOME:-$(build/find-jdk.sh)}"
export MAVEN_OPTS="${MAVEN_OPTS:---sun-misc-unsafe-memory-access=allow}"
MVN="mvn -B -ntp -q ${MVN_OFFLINE:-}"
$MVN -DskipTests compile dependency:build-classpath -DincludeScope=runtime \
  -Dmdep.outputFile=target/deps-check/classpath.txt
$MVN -DskipTests compile dependency:list -DexcludeTransitive=true -DincludeScope=runtime \
  -DoutputFile=target/deps-check/direct.txt
tools=target/deps-check-tools.txt
mkdir -p target
if ! $MVN -f build/tools-deps.pom.xml dependency:build-classpath -Dmdep.outputFile="$PWD/$tools" 2>/dev/null; then
  echo "tools.deps unavailable: checking direct dependencies only"; : > "$tools"
fi
clj_cp=$(tr ':' '\n' < http/target/deps-check/classpath.txt | grep -E '/(clojure|spec.alpha|core.specs.alpha)-[0-9]' | paste -sd:)
"$JAVA_HOME/bin/java" -cp "$(cat "$tools"):$clj_cp" clojure.main build/check_deps_edn.clj
