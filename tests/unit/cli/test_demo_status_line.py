"""The demo's status line, from a pool status the operator's own decisions wrote (reconcile.decide_pool):
a balanced pool's line never calls a goal violated, an unbalanced one's names the goal it misses."""

from __future__ import annotations

from typing import Any

from kafka_balancer.reconcile.pool import decide_pool
from kafka_balancer.reconcile.snapshot import ClusterMetadata, PartitionMeta
from kafka_balancer_dev.demo.view import status_line
from tests.unit.reconcile.test_service import RACKS, pool_input

# 6 partitions RF 2 over brokers 1, 2, 3 (racks a, b, c): 4 replicas each, nothing to move.
SPREAD = ClusterMetadata(
    RACKS, tuple(PartitionMeta("orders", p, ((1, 2), (2, 3), (3, 1))[p % 3], 0) for p in range(6))
)
REPLICAS = {1: 4, 2: 4, 3: 4}


def _pool(**overrides: Any) -> dict[str, Any]:
    """The pool as ``kubectl get bp -o json`` returns it after the operator's sync."""
    return {"status": decide_pool(pool_input("DryRun", **overrides)).status.to_dict()}


def test_a_balanced_pools_line_says_every_goal_holds() -> None:
    pool = _pool(metadata=SPREAD)

    line = status_line(pool, REPLICAS)

    assert line.startswith("balanced=True moves 0/0")
    assert "goals: replicas ok (" in line
    assert "violated" not in line


def test_an_unbalanced_pools_line_names_the_goal_it_misses() -> None:
    line = status_line(_pool(), {1: 8, 2: 8, 3: 0})

    assert line.startswith("balanced=False")
    assert "goals: replicas violated (" in line
