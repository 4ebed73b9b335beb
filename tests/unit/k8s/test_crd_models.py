"""The pydantic models of the CR specs (api.py) mirror the CRDs (crds/): fields, required, enums, bounds,
defaults. The integration tests (tests/integration/test_crds.py) check verdicts against the apiserver."""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from kafka_balancer.api import BalancerGoalSpec, BrokerPoolSpec
from kafka_balancer.goals.spec import GoalType
from kafka_balancer.k8s.mirrored_executor import options_of
from kafka_balancer.kafka.execution_state import MoveOrder
from kafka_balancer.kube_quantity import QUANTITY_PATTERN

CRDS = Path(__file__).resolve().parents[3] / "crds"


def spec_schema(file: str) -> dict[str, Any]:
    crd = yaml.safe_load((CRDS / file).read_text())
    (version,) = crd["spec"]["versions"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return schema


def _args(annotation: Any) -> list[Any]:
    """Flatten Optional/Union/list/Annotated into the types they carry."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _args(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType, list):
        return [a for arg in typing.get_args(annotation) for a in _args(arg)]
    return [annotation]


def _model_in(annotation: Any) -> type[BaseModel] | None:
    models = [a for a in _args(annotation) if isinstance(a, type) and issubclass(a, BaseModel)]
    return models[0] if models else None


def _literal_values(annotation: Any) -> list[Any] | None:
    literals = [a for a in _args(annotation) if typing.get_origin(a) is typing.Literal]
    return list(typing.get_args(literals[0])) if literals else None


def _metadata(field: Any, name: str) -> Any:
    return next((getattr(m, name) for m in field.metadata if getattr(m, name, None) is not None), None)


def compare(model: type[BaseModel], schema: dict[str, Any], path: str, *, optional: frozenset[str]) -> None:
    fields = {f.alias or name: f for name, f in model.model_fields.items()}
    properties = schema["properties"]
    assert set(fields) == set(properties), path
    required = {alias for alias, f in fields.items() if f.is_required()}
    assert required == set(schema.get("required", [])) - optional, path
    for key, prop in properties.items():
        field, where = fields[key], f"{path}.{key}"
        if "enum" in prop:
            assert _literal_values(field.annotation) == prop["enum"], where
        if "default" in prop and prop["default"] != {}:
            assert field.get_default(call_default_factory=True) == prop["default"], where
        if "minimum" in prop:
            assert _metadata(field, "ge") == prop["minimum"], where
        if "maximum" in prop:
            assert _metadata(field, "le") == prop["maximum"], where
        if prop.get("x-kubernetes-int-or-string"):
            assert prop["pattern"] == QUANTITY_PATTERN, where
        elif "pattern" in prop:
            assert _metadata(field, "pattern") == prop["pattern"], where
        nested = prop["items"] if prop.get("type") == "array" else prop
        if nested.get("type") == "object":
            sub = _model_in(field.annotation)
            assert sub is not None, where
            compare(sub, nested, where, optional=frozenset())


def test_balancer_goal_spec_mirrors_the_crd() -> None:
    # poolRef: required by the CRD, optional for the CLI, which ignores it.
    compare(BalancerGoalSpec, spec_schema("balancergoals.yaml"), "spec", optional=frozenset({"poolRef"}))


def test_broker_pool_spec_mirrors_the_crd() -> None:
    compare(BrokerPoolSpec, spec_schema("brokerpools.yaml"), "spec", optional=frozenset())


def test_goal_types_of_the_crd_are_the_planner_catalog() -> None:
    assert spec_schema("balancergoals.yaml")["properties"]["type"]["enum"] == [t.value for t in GoalType]


def test_the_crds_never_accept_a_float() -> None:
    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            assert node.get("type") != "number", path
            for key, value in node.items():
                walk(value, f"{path}.{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{path}[{i}]")

    walk(spec_schema("balancergoals.yaml"), "goal.spec")
    walk(spec_schema("brokerpools.yaml"), "pool.spec")


POOL: dict[str, Any] = {
    "kafka": {"bootstrapServers": "a:9092,b:9092"},
    "capacity": {"disk": "2Ti", "networkIn": "125M", "networkOut": 125000000, "cpu": "7500m"},
}


def test_a_minimal_pool_gets_the_documented_defaults() -> None:
    spec = BrokerPoolSpec.model_validate(POOL)

    assert spec.mode == "Manual"
    assert spec.detection_interval_seconds == 60
    assert (spec.warm_up.duration, spec.warm_up.steps, spec.warm_up.seconds) == ("30m", 4, 1800)
    assert (spec.execution.max_moves_per_broker, spec.execution.max_moves) == (5, 50)
    assert spec.connection().security_protocol == "PLAINTEXT"
    healing = spec.self_healing
    assert (healing.enabled, healing.broker_failure_seconds) == (False, 1800)
    assert (healing.max_failed_brokers, healing.max_failed_percent) == (10, 40)


def test_the_pools_execution_settings_reach_the_executor() -> None:
    default = options_of(BrokerPoolSpec.model_validate(POOL).execution)
    execution = {
        "throttleBytesPerSecond": "1Mi",
        "replicasAtATime": 1,
        "order": "SmallestFirst",
        "moveTimeoutSeconds": 120,
        "deadBrokerTimeoutSeconds": 15,
        "healthTimeoutSeconds": 60,
    }
    stepped = options_of(BrokerPoolSpec.model_validate({**POOL, "execution": execution}).execution)

    assert (default.throttle, default.max_moves_per_broker, default.max_moves) == (50 * 2**20, 5, 50)
    assert default.replicas_at_a_time == 0  # all new replicas of a partition at once
    assert default.order is MoveOrder.PLAN
    assert (stepped.throttle, stepped.replicas_at_a_time) == (2**20, 1)
    assert stepped.order is MoveOrder.SMALLEST_FIRST
    assert (default.timeout_per_move_s, default.dead_broker_timeout_s) == (600.0, 300.0)
    assert (stepped.timeout_per_move_s, stepped.dead_broker_timeout_s) == (120.0, 15.0)
    assert (default.health_timeout_s, stepped.health_timeout_s) == (1800.0, 60.0)


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"capacity": {**POOL["capacity"], "disk": 1.5}}, "disk"),
        ({"capacity": {**POOL["capacity"], "disk": "2 TB"}}, "is not a Kubernetes quantity"),
        ({"execution": {"maxMoves": 2, "maxMovesPerBroker": 3}}, "must not exceed execution.maxMoves"),
        ({"execution": {"replicasAtATime": 0}}, "greater than or equal to 1"),
        ({"execution": {"order": "BiggestFirst"}}, "'Plan' or 'SmallestFirst'"),
        ({"execution": {"deadBrokerTimeoutSeconds": 1}}, "greater than or equal to 5"),
        ({"execution": {"healthTimeoutSeconds": 1}}, "greater than or equal to 10"),
        ({"execution": {"throttleBytesPerSecond": "500m"}}, "below 1Ki: every move would stall"),
        ({"execution": {"throttleBytesPerSecond": 0}}, "below 1Ki: every move would stall"),
        ({"execution": {"maxMoves": 20000}}, "less than or equal to 10000"),
        ({"execution": {"maxMovesPerBroker": 1001, "maxMoves": 2000}}, "less than or equal to 1000"),
        ({"execution": {"replicasAtATime": 101}}, "less than or equal to 100"),
        ({"drain": [1, 1]}, "duplicate broker id"),
        ({"demote": [2, 2]}, "duplicate broker id"),
        ({"demote": [-1]}, "greater than or equal to 0"),
        ({"drain": [1], "warmUp": {"brokers": [1]}}, "both drained"),
        ({"kafka": {"bootstrapServers": "a:1", "securityProtocol": "SASL_SSL"}}, "needs kafka.sasl"),
        ({"scoring": {"engine": "SparkOnKubernetes"}}, "scoring.image is required"),
        ({"detectionIntervalSeconds": 5}, "greater than or equal to 10"),
        ({"warmUp": {"duration": "30 minutes"}}, "should match pattern"),
        ({"mode": "Yolo"}, "Auto"),
        ({"selfHealing": {"brokerFailureSeconds": 30}}, "must not be shorter than detectionIntervalSeconds"),
        ({"selfHealing": {"maxFailedBrokers": 0}}, "greater than or equal to 1"),
        ({"selfHealing": {"maxFailedPercent": 101}}, "less than or equal to 100"),
    ],
)
def test_an_invalid_pool_is_refused_with_the_crd_message(patch: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        BrokerPoolSpec.model_validate({**POOL, **patch})
