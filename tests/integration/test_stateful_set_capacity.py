"""A pool's capacities read from its StatefulSet as the real apiserver returns it (camelCase keys,
quantities as written), through the operator's own client."""

from __future__ import annotations

import json
from typing import Any

from kafka_balancer.api import BrokerPoolSpec
from kafka_balancer.k8s.kube import Kube
from kafka_balancer.reconcile.stateful_set import with_stateful_set_capacity
from kafka_balancer_dev.localbed import kube

NAMESPACE = "kb-test-stateful-set-capacity"


def test_disk_and_cpu_come_from_the_stateful_set_the_api_returns(kube_bed: kube.KubeBed) -> None:
    created = kube_bed.kubectl("create", "namespace", NAMESPACE)
    assert created.returncode == 0, created.stderr
    claim: dict[str, Any] = {
        "metadata": {"name": "data-0"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "500Gi"}}},
    }
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "kafka", "namespace": NAMESPACE},
        "spec": {
            "serviceName": "kafka",
            "selector": {"matchLabels": {"app": "kafka"}},
            "volumeClaimTemplates": [claim, {**claim, "metadata": {"name": "data-1"}}],
            "template": {
                "metadata": {"labels": {"app": "kafka"}},
                "spec": {
                    "containers": [
                        {"name": "kafka", "image": "kafka:none", "resources": {"limits": {"cpu": "3500m"}}}
                    ]
                },
            },
        },
    }
    try:
        applied = kube_bed.kubectl("apply", "-f", "-", stdin=json.dumps(manifest))
        assert applied.returncode == 0, applied.stderr
        spec = BrokerPoolSpec.model_validate(
            {
                "kafka": {"bootstrapServers": "k:9092"},
                "capacity": {"networkIn": "100M", "networkOut": "100M"},
                "statefulSet": {"name": "kafka"},
            }
        )
        client = Kube(str(kube_bed.kubeconfig))

        found = with_stateful_set_capacity(spec, client.read_stateful_set(NAMESPACE, "kafka"))

        assert (found.capacity.disk, found.capacity.cpu) == (1000 * 2**30, "3500m")
        assert client.read_stateful_set(NAMESPACE, "zookeeper") is None
    finally:
        kube_bed.kubectl("delete", "namespace", NAMESPACE, "--wait=false")
