"""Capacities a pool leaves to its StatefulSet (reconcile/stateful_set.py): disk from the volume
claims' storage, cpu from the Kafka container; what the pool gives wins."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from kafka_balancer.api import BrokerPoolSpec
from kafka_balancer.errors import InputError
from kafka_balancer.reconcile.stateful_set import with_stateful_set_capacity
from tests.unit.k8s.test_orchestration import SPEC, bed

NETWORK_ONLY = {"networkIn": "100M", "networkOut": "100M"}


def pool_spec(**capacity: Any) -> BrokerPoolSpec:
    return BrokerPoolSpec.model_validate(
        {**SPEC, "capacity": {**NETWORK_ONLY, **capacity}, "statefulSet": {"name": "kafka"}}
    )


def stateful_set(claims: list[str | None], containers: list[dict[str, Any]]) -> dict[str, Any]:
    templates = [
        {"metadata": {"name": f"data-{i}"}, "spec": {"resources": {"requests": {"storage": s}} if s else {}}}
        for i, s in enumerate(claims)
    ]
    return {"spec": {"volumeClaimTemplates": templates, "template": {"spec": {"containers": containers}}}}


KAFKA = {"name": "kafka", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "4"}}}
SIDECAR = {"name": "exporter", "resources": {"limits": {"cpu": "100m"}}}


def test_disk_is_the_claims_storage_and_cpu_the_kafka_containers_limit() -> None:
    found = with_stateful_set_capacity(pool_spec(), stateful_set(["100Gi", "100Gi"], [SIDECAR, KAFKA]))

    assert found.capacity.disk == 200 * 2**30  # JBOD: a claim per log dir
    assert found.capacity.cpu == "4"
    assert (found.capacity.network_in, found.capacity.network_out) == ("100M", "100M")


def test_without_a_limit_the_request_and_without_a_kafka_container_the_first() -> None:
    found = with_stateful_set_capacity(
        pool_spec(), stateful_set(["1Ti"], [{"name": "broker", "resources": {"requests": {"cpu": "1500m"}}}])
    )

    assert found.capacity.cpu == "1500m"


def test_what_the_pool_gives_wins() -> None:
    given = pool_spec(disk="2Ti", cpu=8)

    assert with_stateful_set_capacity(given, None) == given  # nothing is read
    only_cpu = with_stateful_set_capacity(pool_spec(disk="2Ti"), stateful_set([], [KAFKA]))
    assert (only_cpu.capacity.disk, only_cpu.capacity.cpu) == ("2Ti", "4")


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        (None, "spec.statefulSet: StatefulSet kafka not found in the pool's namespace"),
        (stateful_set([], [KAFKA]), "capacity.disk: not given, and StatefulSet kafka has no volume claim"),
        (
            stateful_set([None], [KAFKA]),
            "capacity.disk: not given, and StatefulSet kafka has no volume claim",
        ),
        (
            stateful_set(["1Ti"], [{"name": "kafka"}]),
            "capacity.cpu: not given, and StatefulSet kafka's container",
        ),
        (
            stateful_set(["lots"], [KAFKA]),
            "StatefulSet kafka: volumeClaimTemplates[].spec.resources.requests",
        ),
    ],
)
def test_what_cannot_be_read_is_said_naming_the_field(manifest: dict[str, Any] | None, message: str) -> None:
    with pytest.raises(InputError) as err:
        with_stateful_set_capacity(pool_spec(), manifest)
    assert str(err.value).startswith(message), err.value


def test_without_a_stateful_set_disk_and_cpu_are_required() -> None:
    with pytest.raises(ValidationError, match=r"capacity\.disk and capacity\.cpu are required unless"):
        BrokerPoolSpec.model_validate({**SPEC, "capacity": NETWORK_ONLY})


def test_a_pass_reads_the_capacities_the_pool_leaves_to_its_stateful_set(tmp_path: Path) -> None:
    b = bed(tmp_path)
    b.kube.stateful_sets[("kafka", "kafka")] = stateful_set(["2Ti"], [KAFKA])

    b.sync("DryRun", spec={"capacity": NETWORK_ONLY, "statefulSet": {"name": "kafka"}})

    assert b.conditions()["SpecValid"][0] == "True"
    assert b.reader.reads == 1

    del b.kube.stateful_sets[("kafka", "kafka")]
    b.sync("DryRun", spec={"capacity": NETWORK_ONLY, "statefulSet": {"name": "kafka"}})

    assert b.conditions()["SpecValid"] == ("False", "InvalidSpec")
    assert "StatefulSet kafka not found" in b.condition_message("SpecValid")
