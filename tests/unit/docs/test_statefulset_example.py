"""examples/statefulset/, which the README's "Kafka in a StatefulSet" quickstart applies: the manifests
parse, the pool's StatefulSet and broker id offset are those of the Kafka beside it (its pods' start
script, run here, makes pod ``kafka-<n>`` broker ``brokerIdOffset + n``), the capacities the pool
leaves out can be read from that StatefulSet, and the quickstart applies every file and scales down
the broker it names. The pool and goals pass the operator's own validation in
tests/unit/docs/test_readme.py, which covers every example."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kafka_balancer.api import BrokerPool
from kafka_balancer.kube_quantity import parse_quantity
from kafka_balancer.reconcile.stateful_set import with_stateful_set_capacity
from tests.support.readme import README, ROOT, example_manifests

EXAMPLE = ROOT / "examples" / "statefulset"
NAMESPACE = "kafka"
# What the script finds in the image (apache/kafka): its tools, and a writable /tmp.
IMAGE_BIN = "/opt/kafka/bin"
WRITTEN_CONFIG = "/tmp/server.properties"


def documents() -> list[tuple[str, dict[str, Any]]]:
    return [
        (path.name, doc)
        for path in sorted(EXAMPLE.glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc is not None
    ]


def one(kind: str, name: str | None = None) -> dict[str, Any]:
    found = [doc for _, doc in documents() if doc["kind"] == kind and name in (None, doc["metadata"]["name"])]
    assert len(found) == 1, f"examples/statefulset: {len(found)} {kind} named {name}"
    return found[0]


def pool() -> BrokerPool:
    return BrokerPool.model_validate(one("BrokerPool"))


def brokers() -> dict[str, Any]:
    ref = pool().spec.stateful_set
    assert ref is not None, "the example pool names no StatefulSet"
    return one("StatefulSet", ref.name)


def container(stateful_set: dict[str, Any]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = stateful_set["spec"]["template"]["spec"]["containers"]
    return containers[0]


def start(stateful_set: dict[str, Any], ordinal: int, tmp_path: Path) -> tuple[dict[str, str], str]:
    """Run the pod's start script as pod ``<name>-<ordinal>`` would, the image's tools stubbed: the
    properties the server starts with, and the arguments the volume is formatted with."""
    spec = stateful_set["spec"]["template"]["spec"]
    kafka = container(stateful_set)
    mounts = {m["name"]: m["mountPath"] for m in kafka["volumeMounts"]}
    config_maps = {v["name"]: v["configMap"]["name"] for v in spec["volumes"] if "configMap" in v}
    script_path = Path(kafka["command"][-1])
    script_volume = next(v for v, path in mounts.items() if script_path.parent == Path(path))
    script = one("ConfigMap", config_maps[script_volume])["data"][script_path.name]
    for volume, name in config_maps.items():
        local = tmp_path / volume
        local.mkdir(exist_ok=True)
        for key, text in one("ConfigMap", name)["data"].items():
            (local / key).write_text(text)
        script = script.replace(mounts[volume], str(local))
    stubs = tmp_path / "bin"
    stubs.mkdir(exist_ok=True)
    (stubs / "kafka-storage.sh").write_text(f'#!/bin/sh\necho "$@" >{tmp_path}/format\n')
    (stubs / "kafka-server-start.sh").write_text('#!/bin/sh\ncat "$1"\n')
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    assert IMAGE_BIN in script and WRITTEN_CONFIG in script
    script = script.replace(IMAGE_BIN, str(stubs)).replace(
        WRITTEN_CONFIG, str(tmp_path / "server.properties")
    )
    env = {e["name"]: e["value"] for e in kafka["env"] if "value" in e}
    env |= {"PATH": os.environ["PATH"], "HOSTNAME": f"{stateful_set['metadata']['name']}-{ordinal}"}
    env |= {"POD_NAMESPACE": NAMESPACE}
    done = subprocess.run(
        ["sh", "-c", script], env=env, capture_output=True, text=True, timeout=10, check=False
    )
    assert done.returncode == 0, done.stderr
    props = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line and line[0] != "#")
    return props, (tmp_path / "format").read_text()


def test_every_manifest_parses_and_takes_its_namespace_from_the_command() -> None:
    docs = documents()
    assert {name for name, _ in docs} == {"kafka.yaml", "pool.yaml", "goals.yaml"}
    for name, doc in docs:
        assert doc.get("apiVersion") and doc.get("kind") and doc["metadata"].get("name"), name
        # The quickstart applies them with -n; a namespace in the file would contradict it.
        assert "namespace" not in doc["metadata"], f"{name}: {doc['kind']}/{doc['metadata']['name']}"


def test_the_pool_and_goals_are_among_the_examples_the_operators_models_check() -> None:
    ours = {
        (d["kind"], d["metadata"]["name"])
        for _, d in documents()
        if d["apiVersion"].startswith("kafkabalancer")
    }
    checked = {(d["kind"], d["metadata"]["name"]) for d in example_manifests()}
    assert ("BrokerPool", "kafka") in ours and ours <= checked


def test_the_goals_name_the_pool() -> None:
    goals = [doc for _, doc in documents() if doc["kind"] == "BalancerGoal"]
    assert goals
    assert {g["spec"]["poolRef"]["name"] for g in goals} == {pool().metadata.name}


def test_the_pool_leaves_disk_and_cpu_to_its_stateful_set_which_gives_them() -> None:
    spec = pool().spec
    assert spec.capacity.disk is None and spec.capacity.cpu is None
    stateful_set = brokers()
    claims = stateful_set["spec"]["volumeClaimTemplates"]
    filled = with_stateful_set_capacity(spec, stateful_set)
    assert filled.capacity.disk == parse_quantity(claims[0]["spec"]["resources"]["requests"]["storage"])
    assert filled.capacity.cpu == container(stateful_set)["resources"]["limits"]["cpu"]


@pytest.mark.parametrize("ordinal", range(6))
def test_pod_n_of_the_pools_stateful_set_is_broker_offset_plus_n_advertised_on_its_stable_name(
    ordinal: int, tmp_path: Path
) -> None:
    ref = pool().spec.stateful_set
    assert ref is not None
    stateful_set = brokers()
    props, formatted = start(stateful_set, ordinal, tmp_path)

    assert props["process.roles"] == "broker"
    assert int(props["node.id"]) == ref.broker_id(ordinal)
    service = stateful_set["spec"]["serviceName"]
    assert one("Service", service)["spec"]["clusterIP"] == "None"
    assert props["advertised.listeners"] == f"PLAINTEXT://{ref.name}-{ordinal}.{service}.{NAMESPACE}.svc:9092"
    # A rescheduled pod finds its volume formatted and must start, not fail.
    assert "--ignore-formatted" in formatted.split()


def test_the_quickstarts_scale_down_leaves_a_broker_in_the_leaving_brokers_rack(tmp_path: Path) -> None:
    stateful_set = brokers()
    replicas = stateful_set["spec"]["replicas"]
    racks = []
    for ordinal in range(replicas):
        (tmp_path / str(ordinal)).mkdir()
        racks.append(start(stateful_set, ordinal, tmp_path / str(ordinal))[0]["broker.rack"])
    assert len(set(racks)) == 3, racks
    # Scaling down by one removes the highest ordinal; its rack keeps a broker to drain it into.
    assert racks[-1] in racks[:-1], racks


def test_the_controller_is_the_voter_the_brokers_name_and_every_node_formats_one_cluster(
    tmp_path: Path,
) -> None:
    (tmp_path / "controller").mkdir()
    (tmp_path / "broker").mkdir()
    controller = one("StatefulSet", "kafka-controller")
    props, controller_format = start(controller, 0, tmp_path / "controller")
    broker_props, broker_format = start(brokers(), 0, tmp_path / "broker")

    voter = f"{props['node.id']}@{controller['metadata']['name']}-0.{controller['spec']['serviceName']}:9093"
    assert props["process.roles"] == "controller"
    assert props["controller.quorum.voters"] == broker_props["controller.quorum.voters"] == voter
    assert cluster_id(controller_format) == cluster_id(broker_format)


def cluster_id(format_args: str) -> str:
    args = format_args.split()
    return args[args.index("--cluster-id") + 1]


def quickstart() -> str:
    """The README's "Kafka in a StatefulSet" section."""
    text = README.split("### Kafka in a StatefulSet\n", 1)[1]
    return text.split("\n## ", 1)[0]


def test_the_quickstart_applies_every_file_of_the_example() -> None:
    namespaces = set(re.findall(r"kubectl apply -n (\S+) -f examples/statefulset/", quickstart()))
    files = set(re.findall(r"-f examples/statefulset/(\S+)", quickstart()))
    assert files == {path.name for path in EXAMPLE.glob("*.yaml")}
    # Into the namespace the pool's bootstrap address names.
    namespace = pool().spec.connection().bootstrap_servers.split(".")[1]
    assert namespaces == {namespace}


def test_the_quickstarts_scale_down_removes_the_broker_it_names() -> None:
    ref = pool().spec.stateful_set
    assert ref is not None
    replicas = brokers()["spec"]["replicas"]
    scales = re.findall(r"kubectl scale sts (\S+) -n \S+ --replicas=(\d+)", quickstart())
    assert scales and set(scales) == {(ref.name, str(replicas - 1))}
    leaving = ref.broker_id(replicas - 1)
    assert f"`{ref.name}-{replicas - 1}` (broker {leaving})" in quickstart()
    assert f"brokers [{leaving}] still hold" in quickstart()
    assert f"data-{ref.name}-{replicas - 1}" in quickstart()
