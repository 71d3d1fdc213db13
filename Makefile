# Herald: the two commands of the README (make run, make test) and the rest.
SHELL := /bin/bash
JAVA_HOME := $(shell build/find-jdk.sh)
export JAVA_HOME
export PATH := $(JAVA_HOME)/bin:$(PATH)
JAVA_MAJOR := $(shell $(JAVA_HOME)/bin/java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
# Maven's own guava calls sun.misc.Unsafe; JDK 23+ warns unless told otherwise
export MAVEN_OPTS := $(if $(shell [ "$(JAVA_MAJOR)" -ge 23 ] && echo y),--sun-misc-unsafe-memory-access=allow,)
MVN := mvn -B -ntp -Dstyle.color=never
PORT ?= 8080
DATA_DIR ?= data
FEED_JAR := feed/target/herald-feed.jar
# ParallelGC: on 2 cores shared with clients it served ~2x the posts/s of ZGC (bench/results/feed.csv)
JVM_OPTS ?= -XX:+UseParallelGC -Xmx2g --enable-native-access=ALL-UNNAMED

.PHONY: run test build install jar repl clean bench bench-http bench-feed bench-flow bench-load test-deps

## make run: build if needed, then start the news feed service on embedded storage (PORT, DATA_DIR override)
run: $(FEED_JAR)
	PORT=$(PORT) DATA_DIR=$(DATA_DIR) java $(JVM_OPTS) -jar $(FEED_JAR)

$(FEED_JAR): $(shell find pom.xml */pom.xml */src/main -type f 2>/dev/null)
	$(MVN) -q -DskipTests install

jar: $(FEED_JAR)

build:
	$(MVN) -q -DskipTests install

## make install: the modules' jars into ~/.m2 as dev.herald:herald-{json,http,flow,load,feed} (README, Use from another project)
install: build

## make repl: a REPL with every module on the classpath (Maven's), plus a socket REPL on REPL_PORT (5555)
repl:
	build/repl.sh

## make test: every test of every module; the last line is "N passed, N failed, N skipped"
test: test-deps
	@rm -f */target/clojure-test-summary.txt; rm -rf */target/surefire-reports; \
	$(MVN) -fae test; rc=$$?; \
	build/test-summary.sh; sum=$$?; \
	if [ $$rc -ne 0 ] && [ $$sum -eq 0 ]; then echo "build failed (maven exit $$rc)"; echo "0 passed, 1 failed"; exit 1; fi; \
	exit $$sum

## packages some integration tests use (Debian's Ring and Compojure jars, wrk); best effort
test-deps:
	@build/test-deps.sh

bench: bench-http bench-feed bench-flow bench-load
bench-http:   # compiles the committed http sources itself
	bench/http.sh
bench-feed: build
	bench/feed.sh
bench-flow: build
	bench/flow.sh
bench-load: build
	bench/load.sh
bench-peers:  # herald against Ring's Jetty adapter and raw Netty; installs Debian's packages itself
	bench/peers.sh

clean:
	$(MVN) -q clean
