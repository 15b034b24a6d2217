"""Pure parts of harness.cluster.docker: dockerd flags, labels, names, subnets, the Dockerfile, the
build context and the container's start script (no engine needed)."""
from __future__ import annotations

import ipaddress
import shlex
import subprocess
from pathlib import Path

import pytest

from harness.cluster.docker import DockerError
from harness.cluster.docker.engine import DOCKERD_FLAGS, dockerd_argv
from harness.cluster.docker.image import (BASE_TAG, IMAGE_LABEL, _DPKG_FILTERS, dockerfile, image_tag, mmdebstrap_argv,
                                  write_context)
from harness.cluster.docker.nodes import (CONFIG_DIR, DATA_DIR, LABEL_HARNESS, LABEL_RUN, DockerNet, free_subnet, labels,
                                  log4j_opts, nsenter_prefix, resource_name, start_script)

TEST_RANGE = ipaddress.ip_network("198.18.0.0/15")


def test_dockerd_flags_keep_the_host_firewall_and_private_ranges_alone():
    assert "--iptables=false" in DOCKERD_FLAGS
    assert "--ip6tables=false" in DOCKERD_FLAGS
    assert "--ip-masq=false" in DOCKERD_FLAGS
    assert "--bridge=none" in DOCKERD_FLAGS  # no docker0 on 172.17.0.0/16
    pool = DOCKERD_FLAGS[DOCKERD_FLAGS.index("--default-address-pool") + 1]
    fields = dict(kv.split("=") for kv in pool.split(","))
    assert ipaddress.ip_network(fields["base"]).subnet_of(TEST_RANGE)
    assert int(fields["size"]) >= ipaddress.ip_network(fields["base"]).prefixlen


def test_dockerd_argv_uses_its_own_config_file_and_pidfile(tmp_path):
    argv = dockerd_argv("/usr/sbin/dockerd", tmp_path)
    assert argv[0] == "/usr/sbin/dockerd"
    assert argv[argv.index("--config-file") + 1] == str(tmp_path / "daemon.json")
    assert argv[argv.index("--pidfile") + 1] == str(tmp_path / "dockerd.pid")
    assert argv[-len(DOCKERD_FLAGS):] == DOCKERD_FLAGS


def test_labels_name_the_harness_and_the_run():
    lab = labels("r42", node="3")
    assert lab == {LABEL_HARNESS: "1", LABEL_RUN: "r42", "eos-chaos.node": "3"}


@pytest.mark.parametrize("run_id, expected", [
    ("20261123-smoke-s1", "eosc-20261123-smoke-s1"),
    ("a b/c:d", "eosc-a-b-c-d"),
])
def test_resource_names_are_valid_docker_names(run_id, expected):
    assert resource_name(run_id) == expected
    assert resource_name(run_id, "n1") == expected + "-n1"


def test_free_subnet_skips_used_and_the_pools_first():
    assert free_subnet([]) == "198.19.1.0/24"
    assert free_subnet(["198.19.1.0/24", "198.19.2.0/24", "172.18.0.0/16"]) == "198.19.3.0/24"
    # a wider network that covers several /24s blocks all of them
    assert free_subnet(["198.19.0.0/22"]) == "198.19.4.0/24"


def test_free_subnet_full_pool_is_a_one_line_error():
    with pytest.raises(DockerError, match="eos-chaos cleanup"):
        free_subnet(["198.19.0.0/16"])


def test_testnet_addresses_follow_the_netns_numbering():
    net = DockerNet(name="eosc-x", id="abc", subnet="198.19.7.0/24", gateway="198.19.7.1")
    assert [net.address(i) for i in (1, 2, 3)] == ["198.19.7.11", "198.19.7.12", "198.19.7.13"]
    assert ipaddress.ip_address(net.address(1)) in TEST_RANGE


def test_nsenter_prefix():
    assert nsenter_prefix(1234) == ["nsenter", "-t", "1234", "-n"]


def test_image_tag():
    assert image_tag("4.3.1") == "kafka-eos-chaos/kafka:4.3.1"


def test_dockerfile_has_the_official_layout_and_no_run_step():
    text = dockerfile("4.3.1")
    lines = text.splitlines()
    assert lines[0] == f"FROM {BASE_TAG}"
    assert not any(ln.startswith("RUN") for ln in lines)  # the build starts no container
    for dest in ("/opt/kafka/libs/", "/opt/kafka/bin/", "/opt/kafka/config/", DATA_DIR + "/"):
        assert any(ln.startswith("COPY") and ln.endswith(dest) for ln in lines), dest
    assert f'{IMAGE_LABEL}="1"' in text and 'org.apache.kafka.version="4.3.1"' in text


def test_mmdebstrap_argv_builds_minbase_with_the_jre_and_python3():
    argv = mmdebstrap_argv(Path("/tmp/out.tar"), mirror="http://deb.example/debian", security="http://sec.example/s")
    assert "--variant=minbase" in argv and "--include=openjdk-17-jre-headless,python3" in argv
    assert argv[-5:] == ["bookworm", "/tmp/out.tar", "deb http://deb.example/debian bookworm main",
                         "deb http://deb.example/debian bookworm-updates main",
                         "deb http://sec.example/s bookworm-security main"]
    assert all(f"--dpkgopt={f}" in argv for f in _DPKG_FILTERS)


def test_build_context_scripts_run_java_with_kafkas_env(tmp_path):
    libs = tmp_path / "libs-src"
    libs.mkdir()
    (libs / "kafka_2.13-4.3.1.jar").write_bytes(b"jar")
    (libs / "notes.txt").write_text("not a jar")
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    write_context(ctx, "4.3.1", libs)
    assert sorted(p.name for p in (ctx / "libs").iterdir()) == ["kafka_2.13-4.3.1.jar"]
    assert (ctx / "empty").is_dir() and not any((ctx / "empty").iterdir())
    # run the generated start script with a fake java that prints its argv
    fake = tmp_path / "jdk" / "bin"
    fake.mkdir(parents=True)
    (fake / "java").write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    (fake / "java").chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "JAVA_HOME": str(tmp_path / "jdk"), "KAFKA_HEAP_OPTS": "-Xms64m -Xmx64m",
           "KAFKA_LOG4J_OPTS": "-Dlog4j2.configurationFile=/x"}
    proc = subprocess.run([str(ctx / "bin" / "kafka-server-start.sh"), "/c/server.properties"],
                          capture_output=True, text=True, env=env, check=True)
    args = proc.stdout.splitlines()
    assert args[:2] == ["-Xms64m", "-Xmx64m"]
    assert "-Dlog4j2.configurationFile=/x" in args
    assert args[args.index("-cp") + 1] == f"{ctx / 'bin'}/../libs/*"
    assert args[-2:] == ["kafka.Kafka", "/c/server.properties"]
    storage = subprocess.run([str(ctx / "bin" / "kafka-storage.sh"), "format", "-t", "X"],
                             capture_output=True, text=True, env=env, check=True).stdout.splitlines()
    assert storage[-4:] == ["kafka.tools.StorageTool", "format", "-t", "X"]
    usage = subprocess.run([str(ctx / "bin" / "kafka-server-start.sh")], capture_output=True, text=True, env=env)
    assert usage.returncode == 1 and "USAGE" in usage.stderr


def test_start_script_formats_once_then_execs_the_broker(tmp_path):
    script = start_script(f"{CONFIG_DIR}/server.properties", "/mnt/eos-chaos-logs/n1.log", "AbCdEf")
    assert script.startswith("exec >>/mnt/eos-chaos-logs/n1.log 2>&1;")
    assert f"[ ! -f {DATA_DIR}/meta.properties ]" in script
    assert "kafka-storage.sh format -t AbCdEf" in script
    assert script.rstrip().endswith(f"exec /opt/kafka/bin/kafka-server-start.sh {CONFIG_DIR}/server.properties")
    # it is valid sh
    assert subprocess.run(["sh", "-n", "-c", script]).returncode == 0
    assert shlex.split(script)  # balanced quotes


def test_start_script_without_a_log_file_writes_to_docker_logs():
    script = start_script(f"{CONFIG_DIR}/server.properties", None, "AbCdEf")
    assert script.startswith("exec 2>&1;") and ">>" not in script
    assert subprocess.run(["sh", "-n", "-c", script]).returncode == 0


def test_log4j_opts_follow_the_config_the_caller_wrote(tmp_path):
    assert log4j_opts(tmp_path) == ""
    (tmp_path / "log4j.properties").write_text("")
    assert log4j_opts(tmp_path) == f"-Dlog4j.configuration=file:{CONFIG_DIR}/log4j.properties"
    (tmp_path / "log4j2.properties").write_text("")
    assert log4j_opts(tmp_path) == f"-Dlog4j2.configurationFile={CONFIG_DIR}/log4j2.properties"
