# Two commands do everything on a fresh machine (root or sudo, Debian 12 or similar, Python 3.11+):
#   make demo   set up what the demo needs, run scenarios/smoke.yaml on a real 3-node KRaft cluster,
#               print the verdict and the report's path
#   make test   set up everything else too (Go/toxiproxy, actionlint, Chromium, pyspark and Spark's
#               Kafka connector, Kafka 3.9.1), run the unit and integration tests
# `eos-chaos setup --spark / --docker / --kafka-version V` installs each extra on its own.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup setup-test system-deps test-system-deps venv venv-test artifacts artifacts-test actionlint docker-setup demo test unit fuzz-nightly cleanup

# what `make demo` needs: no Go, no Chromium, no Spark, one Kafka version
setup: system-deps venv artifacts
# what `make test` needs on top
setup-test: setup test-system-deps venv-test artifacts-test actionlint

# apt-get installs what is missing of: iproute2 (namespaces), iptables (partitions), a JDK and
# Maven (Kafka's jars), python3-venv (Debian's python3 cannot make a venv without it)
system-deps:
	@missing=""; \
	for t in ip:iproute2 iptables:iptables java:openjdk-17-jre-headless mvn:maven; do \
	  command -v $${t%%:*} >/dev/null 2>&1 || missing="$$missing $${t#*:}"; \
	done; \
	$(PY) -c 'import ensurepip, venv' >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

# Go builds toxiproxy (an older Go, e.g. Debian's 1.19, fetches the toolchain toxiproxy needs
# through the Go module proxy); javac builds the Java client workers; Chromium and its driver
# check the HTML report; fuse3 (fusermount3 and libfuse3, which the mfusepy package loads) for
# the lose-unsynced fault's FUSE layer; libfaketime for the clock-skew fault (docs/faults.md)
test-system-deps:
	@missing=""; \
	for t in go:golang-go javac:openjdk-17-jdk-headless chromium:chromium chromedriver:chromium-driver fusermount3:fuse3; do \
	  command -v $${t%%:*} >/dev/null 2>&1 || missing="$$missing $${t#*:}"; \
	done; \
	ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1 || missing="$$missing libfaketime"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

# re-made when pyproject.toml or the Makefile changes
$(BIN)/eos-chaos: pyproject.toml Makefile
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -e .
	touch $@

venv: $(BIN)/eos-chaos

# the test tools and the spark workload's pyspark (pyproject.toml's extras)
$(VENV)/.extras-test: $(BIN)/eos-chaos
	$(BIN)/pip install -q -e '.[test,spark]'
	touch $@

venv-test: $(VENV)/.extras-test

# Kafka 4.3.1 (the default) from Maven Central
artifacts: venv
	$(BIN)/eos-chaos setup --minimal

# toxiproxy (go install), Kafka 3.9.1 (the version matrix), Spark's Kafka connector jars, the
# PyFlink example's venv (apache-flink, ~800 MB, once: cached) and Flink's Kafka connector jar
artifacts-test: venv-test
	$(BIN)/eos-chaos setup --kafka-version 4.3.1 --kafka-version 3.9.1 --spark --flink

# actionlint v1.7.12 (go install, Go module proxy; an older Go fetches Go 1.25 first) into the cache's
# bin/ beside toxiproxy-server (harness/cluster/artifacts.py actionlint; skipped when it is there):
# tests/unit/test_workflows.py lints .github/workflows/*.yml and `eos-chaos init`'s workflow with it
ACTIONLINT_PATH = $(BIN)/python -c 'from harness.cluster.artifacts import actionlint; print(actionlint())'
actionlint: venv test-system-deps
	@p="$$($(ACTIONLINT_PATH))" && echo "actionlint: $$p"

# the docker backend's tests: Debian's docker.io when dockerd is missing, dockerd started when none
# runs (host firewall left alone, networks on 198.19.0.0/16: docs/docker.md), the Kafka image
# kafka-eos-chaos/kafka:4.3.1 built locally (skipped when it exists)
docker-setup: venv
	$(SUDO) $(BIN)/eos-chaos setup --minimal --docker

demo: setup
	$(SUDO) $(BIN)/eos-chaos run scenarios/smoke.yaml

# EOS_CHAOS_ACTIONLINT: the binary the workflow test runs (found again under sudo, whose HOME differs)
unit: setup-test
	EOS_CHAOS_ACTIONLINT="$$($(ACTIONLINT_PATH))" $(BIN)/python -m pytest tests/unit -q -p no:cacheprovider

# the fuzz suite (tests/unit/test_fuzz.py, part of `make test` with a few hundred examples) with
# 20 times its examples, drawn afresh each time (--hypothesis-profile nightly, tests/unit/conftest.py)
fuzz-nightly: venv-test
	$(BIN)/python -m pytest tests/unit/test_fuzz.py -q -p no:cacheprovider --hypothesis-profile nightly --hypothesis-show-statistics

# the integration tests' brokers run C1 only (EOS_CHAOS_BROKER_JVM_OPTS, harness.cluster.kafka):
# a 3-node cluster ready in 13.0 s instead of 21.7 s on 2 cores (docs/benchmarks.md); runs,
# suites and the zoo keep the JVM's defaults
TEST_BROKER_JVM_OPTS ?= -XX:TieredStopAtLevel=1

# The unit tests run beside the integration tests, in a second pytest niced to 10: the integration
# tests wait on their clusters' loads most of the time (a serial run used 58 CPU-minutes in 46.6
# minutes on 2 cores), so the unit tests take the idle CPU and the integration tests keep theirs
# (their timing margins were measured alone). Both must pass; the unit tests' output follows.
test: setup-test docker-setup
	$(SUDO) env EOS_CHAOS_ACTIONLINT="$$($(ACTIONLINT_PATH))" EOS_CHAOS_BROKER_JVM_OPTS="$(TEST_BROKER_JVM_OPTS)" bash -c '\
	  log=$$(mktemp); \
	  nice -n 10 $(BIN)/python -m pytest tests/unit -q -p no:cacheprovider --durations=10 >"$$log" 2>&1 & unit=$$!; \
	  trap "kill $$unit 2>/dev/null" INT TERM; \
	  $(BIN)/python -m pytest tests/integration -q -p no:cacheprovider --durations=30; integration=$$?; \
	  wait $$unit; unit_rc=$$?; \
	  echo "---- tests/unit (ran beside tests/integration, niced) ----"; cat "$$log"; rm -f "$$log"; \
	  echo "tests/integration exit $$integration, tests/unit exit $$unit_rc"; \
	  [ $$integration -eq 0 ] && [ $$unit_rc -eq 0 ]'

cleanup: venv
	$(SUDO) $(BIN)/eos-chaos cleanup
