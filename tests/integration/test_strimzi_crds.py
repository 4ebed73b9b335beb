"""Strimzi's CRDs, generated from its published API, on the real apiserver: the ``Kafka``, ``KafkaNodePool``
and ``KafkaUser`` shapes of tests/support/strimzi.py, with the status Strimzi's operators write, are stored
and read back as written, and a misspelled field is refused (or, unvalidated, pruned) as Strimzi's
schemas make the apiserver do. What later tests of the Strimzi integration play against."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.support import strimzi
from tests.support.status_subresource import write_status

from kafka_balancer_dev.localbed import kube

NAMESPACE = "kb-test-strimzi"
CLUSTER = "main"
POOL = "brokers"
USER = "balancer"
CLUSTER_ID = "uK6ZYiGdSbS6lDZvhOh_Rw"
CA_CERTIFICATE = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ2x1c3RlckNB\n-----END CERTIFICATE-----\n"
SECRET_LABELS = {"app.kubernetes.io/part-of": "kafka-balancer"}


@pytest.fixture(scope="module")
def strimzi_api(kube_bed: kube.KubeBed, strimzi_crds: Path) -> Iterator[None]:
    applied = kube_bed.kubectl("apply", "--server-side", "-f", str(strimzi_crds))
    assert applied.returncode == 0, applied.stderr
    for crd in strimzi.CRDS:
        kube.wait_established(kube_bed, crd)
    created = kube_bed.kubectl("create", "namespace", NAMESPACE)
    assert created.returncode == 0, created.stderr
    yield
    kube_bed.kubectl("delete", "namespace", NAMESPACE, "--wait=false")


def create(bed: kube.KubeBed, manifest: dict[str, Any], *flags: str) -> None:
    done = bed.kubectl("create", *flags, "-f", "-", stdin=json.dumps(manifest))
    assert done.returncode == 0, done.stderr


def stored(bed: kube.KubeBed, kind: str, name: str) -> dict[str, Any]:
    done = bed.kubectl("get", kind, name, "-n", NAMESPACE, "-o", "json")
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def test_a_kafka_its_node_pool_and_a_user_are_stored_with_the_status_strimzi_writes(
    kube_bed: kube.KubeBed, strimzi_api: None
) -> None:
    listeners = [
        strimzi.listener_status("plain", f"{CLUSTER}-kafka-bootstrap.{NAMESPACE}.svc", 9092),
        strimzi.listener_status("tls", f"{CLUSTER}-kafka-bootstrap.{NAMESPACE}.svc", 9093, [CA_CERTIFICATE]),
    ]
    kafka_status = strimzi.kafka_status(cluster_id=CLUSTER_ID, listeners=listeners, node_pools=[POOL])
    pool_status = strimzi.node_pool_status(
        cluster=CLUSTER, pool=POOL, cluster_id=CLUSTER_ID, node_ids=[0, 1, 2]
    )
    user_status = strimzi.kafka_user_status(USER)
    kafka = strimzi.kafka(CLUSTER, NAMESPACE)
    pool = strimzi.node_pool(POOL, NAMESPACE, CLUSTER, replicas=3, volume_size="10Gi", cpu="2")
    user = strimzi.kafka_user(USER, NAMESPACE, CLUSTER, secret_labels=SECRET_LABELS)

    # A status sent with the resource is dropped: only the status subresource writes it.
    create(kube_bed, {**kafka, "status": kafka_status})
    assert "status" not in stored(kube_bed, "kafka", CLUSTER)
    create(kube_bed, pool)
    create(kube_bed, user)
    write_status(kube_bed, "kafka", CLUSTER, NAMESPACE, kafka_status)
    write_status(kube_bed, "kafkanodepool", POOL, NAMESPACE, pool_status)
    write_status(kube_bed, "kafkauser", USER, NAMESPACE, user_status)

    # Every field is kept as written: none of them is pruned by Strimzi's schemas.
    stored_kafka = stored(kube_bed, "kafka", CLUSTER)
    assert stored_kafka["spec"] == kafka["spec"]
    assert stored_kafka["status"] == kafka_status
    assert stored_kafka["status"]["listeners"][1]["certificates"] == [CA_CERTIFICATE]
    assert stored_kafka["status"]["clusterId"] == CLUSTER_ID
    stored_pool = stored(kube_bed, "kafkanodepool", POOL)
    assert stored_pool["metadata"]["labels"] == {strimzi.CLUSTER_LABEL: CLUSTER}
    assert stored_pool["spec"] == pool["spec"]
    assert stored_pool["spec"]["storage"]["volumes"] == [
        {"id": 0, "type": "persistent-claim", "size": "10Gi", "deleteClaim": False}
    ]
    assert stored_pool["spec"]["resources"] == {"requests": {"cpu": "2"}}
    assert stored_pool["status"]["nodeIds"] == [0, 1, 2]
    assert stored_pool["status"] == pool_status
    stored_user = stored(kube_bed, "kafkauser", USER)
    assert stored_user["spec"] == {
        "authentication": {"type": "scram-sha-512"},
        "template": {"secret": {"metadata": {"labels": SECRET_LABELS}}},
    }
    assert stored_user["status"] == user_status

    listed = kube_bed.kubectl("get", "kafka,kafkanodepool,kafkauser", "-n", NAMESPACE, "-o", "name")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == [
        f"kafka.kafka.strimzi.io/{CLUSTER}",
        f"kafkanodepool.kafka.strimzi.io/{POOL}",
        f"kafkauser.kafka.strimzi.io/{USER}",
    ]
    # Strimzi's printer columns read the status written above.
    table = kube_bed.kubectl("get", "kafka", CLUSTER, "-n", NAMESPACE).stdout.splitlines()
    assert table[0].split()[:2] == ["NAME", "READY"]
    assert table[1].split()[:4] == [CLUSTER, "True", strimzi.KAFKA_VERSION, strimzi.KAFKA_METADATA_VERSION]


def test_a_misspelled_field_is_refused_and_unvalidated_it_is_pruned(
    kube_bed: kube.KubeBed, strimzi_api: None
) -> None:
    pool = strimzi.node_pool("misspelled", NAMESPACE, CLUSTER, replicas=1)
    volume = {"id": 0, "type": "persistent-claim", "sise": "10Gi"}
    pool["spec"]["storage"]["volumes"] = [volume]

    refused = kube_bed.kubectl("create", "-f", "-", stdin=json.dumps(pool))
    assert refused.returncode != 0
    assert 'unknown field "spec.storage.volumes[0].sise"' in refused.stderr

    create(kube_bed, pool, "--validate=false")
    assert stored(kube_bed, "kafkanodepool", "misspelled")["spec"]["storage"]["volumes"] == [
        {"id": 0, "type": "persistent-claim"}
    ]


def test_the_strimzi_examples_are_valid_for_strimzis_crds(kube_bed: kube.KubeBed, strimzi_api: None) -> None:
    """examples/strimzi's Kafka, node pools and KafkaUser, as the README's quickstart applies them:
    every field known to Strimzi's schemas (a misspelled one would be refused, as above)."""
    examples = Path(__file__).resolve().parents[2] / "examples" / "strimzi"
    for name in ("kafka.yaml", "user.yaml"):
        done = kube_bed.kubectl(
            "apply", "-n", NAMESPACE, "--dry-run=server", "--validate=strict", "-f", str(examples / name)
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.count("(server dry run)") == len(
            [d for d in yaml.safe_load_all((examples / name).read_text()) if d]
        ), done.stdout
