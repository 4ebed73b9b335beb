"""A pass of the collector refuses to go on with part of the cluster: what Kafka's ACLs hide is named."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from typing import Any, cast

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_balancer.errors import KafkaAccessDenied
from kafka_balancer.kafka.admin import principal_of
from kafka_balancer.kafka.collector import AdminReader, PartitionInfo, _group_refused, observe
from kafka_balancer.kafka.snapshot_builder import BrokerInfo
from kafka_balancer.kafka.visibility import NAMED, Denial, unseen

Tp = tuple[str, int]


class FakeReader:
    """The reads of a pass over a one-broker cluster with one visible topic."""

    def __init__(self, denials: list[Denial], refused_groups: list[str], any_topic: bool = True) -> None:
        self._any_topic = any_topic
        self._denials = denials
        self._refused = refused_groups
        self.requests: Counter[str] = Counter()

    def brokers(self) -> tuple[BrokerInfo, ...]:
        return (BrokerInfo(1, "a"),)

    def may_describe_any_topic(self) -> bool:
        return self._any_topic

    def denials(self) -> list[Denial]:
        return self._denials

    def partitions(self) -> dict[Tp, PartitionInfo]:
        return {("seen", 0): PartitionInfo((1,), 1, frozenset({1}))}

    def offsets(self, leaders: Mapping[Tp, int], spec: Any) -> dict[Tp, int]:
        return dict.fromkeys(leaders, 0)

    def log_dirs(self, brokers: Iterable[int]) -> dict[int, tuple[Any, ...]]:
        return {}

    def committed_offsets(self, broker_count: int) -> tuple[dict[tuple[str, Tp], int], list[str]]:
        return {}, self._refused

    def reassigning(self) -> dict[Tp, tuple[int, ...]]:
        return {}


def _observe(denials: list[Denial], refused_groups: list[str], any_topic: bool = True) -> None:
    observe(cast(AdminReader, FakeReader(denials, refused_groups, any_topic)))


def test_a_pass_with_nothing_hidden_goes_on() -> None:
    _observe([], [])


def test_a_topic_denied_to_the_principal_stops_the_pass_naming_it() -> None:
    with pytest.raises(KafkaAccessDenied) as raised:
        _observe([Denial("topic", "payments"), Denial("topic", "audit-", prefixed=True)], [])

    message = str(raised.value)
    assert "2 topic(s) it may not describe: audit-*, payments" in message
    assert "docs/security.md" in message


def test_a_principal_that_may_not_describe_every_topic_stops_the_pass() -> None:
    with pytest.raises(KafkaAccessDenied, match=r"not let this principal DESCRIBE every topic.*topic '\*'"):
        _observe([], [], any_topic=False)


def test_a_group_whose_offsets_are_refused_stops_the_pass_naming_it() -> None:
    with pytest.raises(KafkaAccessDenied, match=r"1 group\(s\) it may not read the offsets of: billing"):
        _observe([], ["billing"])


def test_many_hidden_topics_are_counted_and_a_few_named() -> None:
    names = [f"t{i:02d}" for i in range(NAMED + 3)]

    message = unseen([Denial("topic", n) for n in names], [])

    assert message is not None
    assert f"{NAMED + 3} topic(s) it may not describe: {', '.join(names[:NAMED])} and 3 more" in message
    assert names[NAMED] not in message


def test_a_group_denied_by_acl_and_refused_is_named_once() -> None:
    message = unseen([Denial("group", "billing")], ["billing"])

    assert message is not None and "1 group(s)" in message


def _failed(code: int) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_exception(KafkaException(KafkaError(code)))
    return future


def test_only_an_authorization_failure_counts_as_a_refused_group() -> None:
    answered: Future[Any] = Future()
    answered.set_result(object())
    pending: Future[Any] = Future()

    assert _group_refused(_failed(KafkaError.GROUP_AUTHORIZATION_FAILED))
    assert not _group_refused(_failed(KafkaError.GROUP_ID_NOT_FOUND))  # deleted meanwhile
    assert not _group_refused(answered)
    assert not _group_refused(pending)


def test_the_principal_of_a_sasl_login_is_its_user() -> None:
    sasl = {"security.protocol": "SASL_SSL", "sasl.username": "balancer", "sasl.password": "x"}

    assert principal_of(sasl) == "User:balancer"
    assert principal_of({"security.protocol": "SSL"}) is None
    assert principal_of({}) is None
