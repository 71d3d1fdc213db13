#!/usr/bin/env bash
# Prints the home of a JDK >= 21: $JAVA_HOME if it qualifies, else the newest under /usr/lib/jvm, else the
# default java's. Exits 1 with a message on stderr when there is none.
set -u
major() { "$1/bin/java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1; }
ok() { [ -x "$1/bin/javac" ] && [ "$(major "$1")" -ge 21 ] 2>/dev/null; }
if [ -n "${JAVA_HOME:-}" ] && ok "$JAVA_HOME"; then echo "$JAVA_HOME"; exit 0; fi
best=""; bestv=0
for d in /usr/lib/jvm/*/ "$(dirname "$(dirname "$(readlink -f "$(command -v java 2>/dev/null || echo /nonexistent)")")")"; do
  d=${d%/}
  if ok "$d"; then v=$(major "$d"); if [ "$v" -gt "$bestv" ]; then best=$d; bestv=$v; fi; fi
done
if [ -n "$best" ]; then echo "$best"; exit 0; fi
echo "find-jdk: no JDK >= 21 found (set JAVA_HOME, or install one under /usr/lib/jvm)" >&2
exit 1
