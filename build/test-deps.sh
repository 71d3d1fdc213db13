#!/usr/bin/env bash
# Installs the Debian packages that integration tests use (Ring and Compojure jars, wrk, and the servers
# bin/herald-cluster starts: haproxy, redis-server, postgresql; headless Chromium and chromedriver for the
# dashboard's browser test), when they are missing and we are root.
# Never fails the build: a test whose package is missing reports itself skipped with the reason.
set -u
want=(libring-core-clojure libcompojure-clojure wrk haproxy redis-server postgresql chromium chromium-driver)
missing=()
for p in "${want[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "test-deps: cannot install ${missing[*]} (not root or no apt-get); dependent tests will be skipped"; exit 0
fi
echo "test-deps: installing ${missing[*]}"
( apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" ) >/tmp/herald-test-deps.log 2>&1 \
  || echo "test-deps: apt-get failed (see /tmp/herald-test-deps.log); dependent tests will be skipped"
exit 0
