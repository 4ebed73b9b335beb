"""A scale-down of the pool's StatefulSet waits until the brokers it removes are empty: what the
webhook answers (reconcile/scale_down.py) and how a pass drains the brokers it held back for."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from kafka_balancer.api import BrokerPoolSpec, StatefulSetRef
from kafka_balancer.errors import InputError
from kafka_balancer.reconcile.scale_down import (
    SCALE_DOWN_ANNOTATION,
    ScaleDown,
    ScaleRequest,
    admit,
    brokers_removed,
    parse_scale_down,
    with_scale_down,
)
from tests.unit.k8s.test_orchestration import SPEC, bed

KAFKA = StatefulSetRef.model_validate({"name": "kafka", "brokerIdOffset": 100})
DOWN = ScaleRequest("team-a", current=5, wanted=4, via_scale=True)
EVERYONE_CORDONED = frozenset({100, 101, 102, 103, 104})


def test_the_highest_ordinals_are_the_brokers_a_scale_down_removes() -> None:
    assert brokers_removed(KAFKA, 5, 3) == (103, 104)
    assert brokers_removed(KAFKA, 5, 5) == ()


def test_a_scale_down_of_a_broker_holding_replicas_is_held_back_with_one_sentence() -> None:
    answer = admit("team-a/main", "Auto", KAFKA, DOWN, {104: 42, 100: 10}, EVERYONE_CORDONED, None)

    assert not answer.allowed
    assert answer.message == (
        "StatefulSet team-a/kafka: scale-down to 4 replicas held back: brokers [104] still hold 42 "
        "replicas (0 of 42 moved so far); BrokerPool team-a/main drains them into their racks and the "
        "drain runs by itself; retry the same scale-down once they are empty (a GitOps tool retries by "
        "itself)"
    )
    assert answer.record == ScaleDown("kafka", 4, (104,), 42)


def test_a_retried_scale_down_says_how_far_the_drain_is_along() -> None:
    held = ScaleDown("kafka", 4, (104,), 42)

    answer = admit("team-a/main", "Manual", KAFKA, DOWN, {104: 12}, EVERYONE_CORDONED, held)

    assert not answer.allowed
    assert "still hold 12 replicas (30 of 42 moved so far)" in answer.message
    assert "its plan waits for approval (mode Manual)" in answer.message
    assert answer.record == held


def test_a_scale_down_of_empty_cordoned_brokers_goes_through_and_stays_on_record() -> None:
    held = ScaleDown("kafka", 3, (103, 104), 50)
    request = ScaleRequest("team-a", current=5, wanted=3, via_scale=False)

    answer = admit("team-a/main", "Auto", KAFKA, request, {100: 30}, EVERYONE_CORDONED, held)

    assert answer.allowed
    # Kept until a scale-up: uncordoned before their pods are gone, they could take new topics.
    assert answer.record == held


def test_an_empty_broker_that_still_takes_new_topics_is_not_ready_to_go() -> None:
    answer = admit("team-a/main", "Auto", KAFKA, DOWN, {}, frozenset({100}), None)

    assert not answer.allowed
    assert "brokers [104] are empty but not yet cordoned" in answer.message
    assert answer.record == ScaleDown("kafka", 4, (104,), 0)


def test_without_cordoning_in_kafka_an_empty_broker_may_go() -> None:
    assert admit("team-a/main", "Auto", KAFKA, DOWN, {}, None, None).allowed


def test_kubectl_scale_back_withdraws_the_drain_and_other_changes_keep_it() -> None:
    held = ScaleDown("kafka", 4, (104,), 42)
    back = ScaleRequest("team-a", current=5, wanted=5, via_scale=True)
    rollout = ScaleRequest("team-a", current=5, wanted=5, via_scale=False)

    withdrawn = admit("team-a/main", "Auto", KAFKA, back, {104: 40}, EVERYONE_CORDONED, held)
    kept = admit("team-a/main", "Auto", KAFKA, rollout, {104: 40}, EVERYONE_CORDONED, held)

    assert withdrawn.allowed and withdrawn.record is None
    assert withdrawn.message == "StatefulSet team-a/kafka: scale-down to 4 withdrawn; drain stopped"
    assert kept.allowed and kept.record == held


def test_a_held_scale_down_drains_its_brokers_as_spec_drain_does() -> None:
    spec = BrokerPoolSpec.model_validate(
        {**SPEC, "drain": [1], "warmUp": {"brokers": [104]}, "statefulSet": {"name": "kafka"}}
    )

    drained = with_scale_down(spec, ScaleDown("kafka", 4, (104,), 42))
    other = with_scale_down(spec, ScaleDown("zookeeper", 4, (104,), 42))

    assert drained.drain == [1, 104]
    assert drained.warm_up.brokers == []  # a broker leaving is not warmed up
    assert other == spec  # a record of a StatefulSet the pool no longer names drains nothing


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("{", "not JSON"),
        ("[]", "not a JSON object"),
        ('{"replicas":4,"brokers":[4],"replicasHeld":1}', ".statefulSet:"),
        ('{"statefulSet":"k","replicas":-1,"brokers":[4],"replicasHeld":1}', ".replicas:"),
        ('{"statefulSet":"k","replicas":true,"brokers":[4],"replicasHeld":1}', ".replicas:"),
        ('{"statefulSet":"k","replicas":4,"brokers":[],"replicasHeld":1}', ".brokers:"),
        ('{"statefulSet":"k","replicas":4,"brokers":["4"],"replicasHeld":1}', ".brokers:"),
        ('{"statefulSet":"k","replicas":4,"brokers":[4],"replicasHeld":1.5}', ".replicasHeld:"),
    ],
)
def test_an_annotation_edited_by_hand_is_refused_naming_its_field(text: str, field: str) -> None:
    with pytest.raises(InputError, match=f"^metadata.annotations\\[{SCALE_DOWN_ANNOTATION}\\]"):
        parse_scale_down(text)
    with pytest.raises(InputError) as err:
        parse_scale_down(text)
    assert field in str(err.value)


def test_the_annotation_reads_back_as_written() -> None:
    held = ScaleDown("kafka", 3, (103, 104), 50)

    assert parse_scale_down(held.to_annotation()) == held
    assert parse_scale_down(None) is None


def test_a_stateful_set_name_too_long_for_its_pods_labels_is_refused() -> None:
    with pytest.raises(ValidationError, match="at most 52 characters"):
        StatefulSetRef.model_validate({"name": "k" * 53})
    with pytest.raises(ValidationError, match="pattern"):
        StatefulSetRef.model_validate({"name": "Kafka"})


def test_a_pass_drains_and_cordons_the_brokers_a_held_scale_down_removes(tmp_path: Path) -> None:
    b = bed(tmp_path)
    spec = {"statefulSet": {"name": "kafka", "brokerIdOffset": 0}}
    held = {SCALE_DOWN_ANNOTATION: ScaleDown("kafka", 2, (2,), 1).to_annotation()}

    b.sync("DryRun", spec=spec, annotations=held)

    assert b.status()["cordonedBrokers"] == [2]
    assert {x["id"]: x["state"] for x in b.status()["brokers"]}[2] == "Draining"

    b.sync("DryRun", spec=spec)  # the annotation removed: the drain is withdrawn

    assert b.status()["cordonedBrokers"] == []
    assert b.cluster.configs[("broker", "2")] == {}


def test_a_pass_with_an_unreadable_scale_down_says_so_and_reads_no_kafka(tmp_path: Path) -> None:
    b = bed(tmp_path)

    b.sync("DryRun", spec={"statefulSet": {"name": "kafka"}}, annotations={SCALE_DOWN_ANNOTATION: "{"})

    assert b.conditions()["SpecValid"] == ("False", "InvalidSpec")
    assert b.condition_message("SpecValid").startswith(f"metadata.annotations[{SCALE_DOWN_ANNOTATION}]")
    assert b.reader.reads == 0
