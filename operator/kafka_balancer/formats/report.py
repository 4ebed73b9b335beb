"""The ``--report`` JSON: per-broker loads before/after, goals before/after, the plan's figures."""

from __future__ import annotations

from typing import Any

from kafka_balancer.goals.base import GoalStatus
from kafka_balancer.model.cluster import Cluster
from kafka_balancer.model.resources import RESOURCES
from kafka_balancer.model.working import BrokerLoad
from kafka_balancer.planner.plan import Plan


def _load(load: BrokerLoad, capacity: tuple[float, ...]) -> dict[str, Any]:
    return {
        **{r.key: load.loads[r] for r in RESOURCES},
        "replicas": load.replicas,
        "leaders": load.leaders,
        "utilisationPercent": {r.key: 100.0 * load.loads[r] / capacity[r] for r in RESOURCES},
    }


def _status(status: GoalStatus) -> dict[str, Any]:
    out: dict[str, Any] = {"satisfied": status.satisfied, "worstDeviation": round(status.worst_deviation, 6)}
    if status.detail:
        out["detail"] = status.detail
    return out


def report_document(cluster: Cluster, plan: Plan) -> dict[str, Any]:
    f = plan.figures
    return {
        "version": 1,
        "summary": {
            "partitionsChanged": len(plan.reassignments),
            "replicaMoves": f.replica_moves,
            "leaderChanges": f.leader_changes,
            "bytesMoved": f.bytes_moved,
            "bytesMovedLowerBound": f.bytes_moved_lower_bound,
            "crossRackBytes": f.cross_rack_bytes,
            "crossRackBytesLowerBound": f.cross_rack_lower_bound,
            "rackLocalBytesLowerBound": f.rack_local_lower_bound,
            # Only for a snapshot with log dirs, so reports of others read as before.
            **(
                {"intraBrokerBytes": f.intra_broker_bytes} if any(b.log_dirs for b in cluster.brokers) else {}
            ),
            "planningSeconds": round(plan.seconds, 3),
            # Only when some partition has no readable replica: the plan leaves those as they are.
            **({"stranded": list(plan.stranded)} if plan.stranded else {}),
        },
        "goals": [
            {
                "name": g.label,
                "type": g.type,
                "hard": g.hard,
                "priority": g.priority,
                "before": _status(g.before),
                "after": _status(g.after),
            }
            for g in plan.goals
        ],
        "brokers": [
            {
                "id": b.id,
                "rack": b.rack,
                "state": b.state.value,
                "warmUpShare": b.warm_up_share,
                "before": _load(before, b.capacity),
                "after": _load(after, b.capacity),
            }
            for b, before, after in zip(cluster.brokers, plan.brokers_before, plan.brokers_after, strict=True)
        ],
    }
