"""examples/statefulset/ on the real apiserver: `kubectl apply --dry-run=server` of the directory, as
the README's quickstart applies it, is accepted whole (the CRDs' schema and CEL rules for the pool and
goals, the core schemas for the ConfigMaps, Services and StatefulSets), and in what the apiserver
answers, the pool names the broker StatefulSet and its pods' node.id offset."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafka_balancer_dev.localbed import kube

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "statefulset"
NAMESPACE = "kb-test-statefulset-example"


@pytest.fixture(scope="module")
def namespace(kube_bed: kube.KubeBed) -> Iterator[str]:
    """The CRDs installed, and an empty namespace to apply into."""
    applied = kube_bed.kubectl("apply", "--server-side", "-f", str(ROOT / "crds"))
    assert applied.returncode == 0, applied.stderr
    for crd in ("brokerpools.kafkabalancer.io", "balancergoals.kafkabalancer.io"):
        kube.wait_established(kube_bed, crd)
    created = kube_bed.kubectl("create", "namespace", NAMESPACE)
    assert created.returncode == 0, created.stderr
    yield NAMESPACE
    kube_bed.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def applied(kube_bed: kube.KubeBed, namespace: str) -> list[dict[str, Any]]:
    done = kube_bed.kubectl("apply", "--dry-run=server", "-n", namespace, "-f", str(EXAMPLE), "-o", "json")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    items: list[dict[str, Any]] = answer["items"] if answer.get("kind") == "List" else [answer]
    return items


def test_the_example_directory_is_accepted_by_the_apiserver_as_the_quickstart_applies_it(
    kube_bed: kube.KubeBed, namespace: str
) -> None:
    objects = applied(kube_bed, namespace)

    kinds = sorted(o["kind"] for o in objects)
    assert kinds.count("StatefulSet") == 2 and kinds.count("Service") == 3
    assert {"BrokerPool", "BalancerGoal", "ConfigMap"} <= set(kinds)
    assert {o["metadata"]["namespace"] for o in objects} == {namespace}
    # A dry run stores nothing.
    listed = kube_bed.kubectl("get", "statefulsets,bp,bg", "-n", namespace, "-o", "name")
    assert listed.returncode == 0 and listed.stdout.strip() == "", listed.stdout + listed.stderr


def test_the_pool_names_the_broker_stateful_set_and_its_node_id_offset(
    kube_bed: kube.KubeBed, namespace: str
) -> None:
    objects = applied(kube_bed, namespace)
    pool = next(o for o in objects if o["kind"] == "BrokerPool")
    ref = pool["spec"]["statefulSet"]
    sets = {o["metadata"]["name"]: o for o in objects if o["kind"] == "StatefulSet"}

    assert ref["name"] in sets, f"the pool names StatefulSet {ref['name']}; the example has {sorted(sets)}"
    brokers = sets[ref["name"]]
    (kafka,) = brokers["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in kafka["env"]}
    # The pods' start script makes node.id NODE_ID_OFFSET + ordinal (run in the unit tier).
    assert int(env["NODE_ID_OFFSET"]) == ref["brokerIdOffset"]
    assert "RACKS" in env, "the pool's StatefulSet is not the brokers' (only brokers have racks)"
    # Disk and cpu are read from the StatefulSet: the pool leaves them out, the StatefulSet has them.
    assert not {"disk", "cpu"} & set(pool["spec"]["capacity"])
    assert brokers["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"]
    assert kafka["resources"]["limits"]["cpu"]
    # The bootstrap Service selects the pods of the pool's StatefulSet.
    selector = brokers["spec"]["selector"]["matchLabels"]
    services = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Service"}
    host = pool["spec"]["kafka"]["bootstrapServers"].split(":")[0].split(".")[0]
    assert services[host]["spec"]["selector"] == selector
