# Two commands do everything on a fresh machine (root, Debian, Java 17 + Maven, Go, Python 3.11):
#   make demo   set up, run scenarios/smoke.yaml on a real 3-node KRaft cluster, print the report path
#   make test   set up, run the unit and integration tests
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup system-deps venv artifacts demo test unit cleanup

setup: system-deps venv artifacts

# iproute2 for namespaces, iptables (nft backend) for partitions, a JDK and Maven for Kafka, Go for toxiproxy
system-deps:
	@missing=""; \
	for t in ip:iproute2 iptables:iptables java:openjdk-17-jre-headless javac:openjdk-17-jdk-headless mvn:maven go:golang-go chromium:chromium chromedriver:chromium-driver; do \
	  command -v $${t%%:*} >/dev/null 2>&1 || missing="$$missing $${t#*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

# re-made when the Makefile changes too (e.g. a new extra such as `spark`)
$(BIN)/eos-chaos: pyproject.toml Makefile
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,spark]'
	touch $@

venv: $(BIN)/eos-chaos

# Kafka 4.3.1 (default) and 3.9.1 (version matrix) jars and Spark's Kafka connector jars from
# Maven Central, toxiproxy via go install
artifacts: venv
	$(BIN)/eos-chaos setup --kafka-version 4.3.1 --kafka-version 3.9.1 --spark

demo: setup
	$(SUDO) $(BIN)/eos-chaos run scenarios/smoke.yaml

unit: setup
	$(BIN)/python -m pytest tests/unit -q

test: setup
	$(SUDO) $(BIN)/python -m pytest tests -q -p no:cacheprovider

cleanup: venv
	$(SUDO) $(BIN)/eos-chaos cleanup
