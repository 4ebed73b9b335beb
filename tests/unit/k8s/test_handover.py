"""The uninstall's hand-over: every pool is asked to be released, the hook waits until the operator let
each one go (marked released and its finalizer gone), names those it did not, and an install takes
them back."""

from __future__ import annotations

from typing import Any

from kafka_balancer.k8s.handover import (
    KOPF_FINALIZER,
    RELEASE_ANNOTATION,
    RELEASED,
    REQUESTED,
    release,
    resume,
)


class Cluster:
    """Pools as the apiserver holds them, and an operator that releases a requested pool after
    ``answers_after`` polls (None: no operator running)."""

    def __init__(self, *names: str, answers_after: int | None = 1) -> None:
        self.pools: dict[str, dict[str, Any]] = {
            name: {"metadata": {"namespace": "kafka", "name": name, "finalizers": [KOPF_FINALIZER]}}
            for name in names
        }
        self.answers_after = answers_after
        self.polls = 0
        self.now = 0.0

    def annotate(self, namespace: str, name: str, key: str, value: str | None) -> None:
        annotations = self.pools[name]["metadata"].setdefault("annotations", {})
        if value is None:
            annotations.pop(key, None)
        else:
            annotations[key] = value

    def list(self) -> list[dict[str, Any]]:
        self.polls += 1
        if self.answers_after is not None and self.polls > self.answers_after:
            for pool in self.pools.values():
                meta = pool["metadata"]
                if (meta.get("annotations") or {}).get(RELEASE_ANNOTATION) == REQUESTED:
                    meta["annotations"][RELEASE_ANNOTATION] = RELEASED
                    meta["finalizers"] = []
        return list(self.pools.values())

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def released_by(cluster: Cluster, timeout_s: float = 60.0) -> list[str]:
    return release(cluster.annotate, cluster.list, timeout_s, clock=lambda: cluster.now, sleep=cluster.sleep)


def test_every_pool_is_asked_and_the_hook_returns_once_the_operator_let_each_go() -> None:
    cluster = Cluster("main", "logs", answers_after=3)

    assert released_by(cluster) == []
    for pool in cluster.pools.values():
        assert pool["metadata"]["annotations"][RELEASE_ANNOTATION] == RELEASED
        assert pool["metadata"]["finalizers"] == []


def test_pools_the_operator_does_not_release_in_time_are_named() -> None:
    cluster = Cluster("main", "logs", answers_after=None)

    assert released_by(cluster, timeout_s=10.0) == ["kafka/logs", "kafka/main"]
    assert cluster.now > 10.0


def test_a_pool_marked_released_still_holding_the_finalizer_is_not_released_yet() -> None:
    cluster = Cluster("main", answers_after=None)
    cluster.annotate("kafka", "main", RELEASE_ANNOTATION, RELEASED)

    assert released_by(cluster, timeout_s=10.0) == ["kafka/main"]


def test_resume_takes_released_pools_back_and_leaves_the_others_alone() -> None:
    cluster = Cluster("main", "logs")
    cluster.annotate("kafka", "main", RELEASE_ANNOTATION, RELEASED)
    said: list[str] = []

    resume(cluster.annotate, cluster.list, said.append)

    assert RELEASE_ANNOTATION not in cluster.pools["main"]["metadata"]["annotations"]
    assert "annotations" not in cluster.pools["logs"]["metadata"]
    assert said == ["pool kafka/main taken back"]
