#!/usr/bin/env bash
# Adds up the JUnit (Surefire XML) and clojure.test (build/test_runner.clj) results of every module and
# prints one closing line: "N passed, N failed, N skipped". Exits 1 when anything failed.
set -u
cd "$(dirname "$0")/.."
passed=0; failed=0; skipped=0
for f in */target/surefire-reports/TEST-*.xml; do
  [ -f "$f" ] || continue
  head=$(grep -m1 -o '<testsuite [^>]*' "$f")
  attr() { echo "$head" | grep -o " $1=\"[0-9]*\"" | grep -o '[0-9]*' || echo 0; }
  t=$(attr tests); fl=$(attr failures); e=$(attr errors); s=$(attr skipped)
  passed=$((passed + t - fl - e - s)); failed=$((failed + fl + e)); skipped=$((skipped + s))
done
for f in */target/clojure-test-summary.txt; do
  [ -f "$f" ] || continue
  num() { grep -o ":$1 [0-9]*" "$f" | grep -o '[0-9]*' || echo 0; }
  passed=$((passed + $(num passed))); failed=$((failed + $(num failed))); skipped=$((skipped + $(num skipped)))
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
