"""Goals files: the ``BalancerGoal`` manifests users ``kubectl apply`` (multi-document YAML,
or a ``v1`` ``List``, in YAML or JSON)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from kafka_balancer.api import BalancerGoal
from kafka_balancer.errors import InputError
from kafka_balancer.formats.errors import one_line
from kafka_balancer.goals.spec import GoalSpec, default_goal_set

# Kinds a manifest bundle may carry besides goals; the CLI has no use for them.
_IGNORED_KINDS = {"BrokerPool"}


def parse_goals(documents: list[Any], source: str = "goals") -> tuple[GoalSpec, ...]:
    items: list[tuple[str, Any]] = []
    for i, doc in enumerate(documents):
        if doc is None:
            continue
        where = f"{source}: document {i}"
        if not isinstance(doc, dict):
            raise InputError(f"{where}: expected a mapping (a Kubernetes manifest), got {type(doc).__name__}")
        if doc.get("kind") == "List":
            listed = doc.get("items")
            if not isinstance(listed, list):
                raise InputError(f"{where}.items: a List needs a list of items")
            items.extend((f"{where}.items[{j}]", item) for j, item in enumerate(listed))
        else:
            items.append((where, doc))
    specs: list[GoalSpec] = []
    seen: dict[str, str] = {}
    for where, item in items:
        if not isinstance(item, dict):
            raise InputError(f"{where}: expected a mapping, got {type(item).__name__}")
        if item.get("kind") in _IGNORED_KINDS:
            continue
        try:
            goal = BalancerGoal.model_validate(item)
        except ValidationError as exc:
            raise InputError(one_line(exc, where)) from None
        name = goal.metadata.name
        if goal.spec.type in seen:
            raise InputError(
                f"{where}.spec.type: {goal.spec.type} is already set by "
                f"{seen[goal.spec.type] or 'another goal'}"
            )
        seen[goal.spec.type] = name
        specs.append(goal.spec.to_goal(name))
    # A goals file with no goal means the documented default set, as for a pool without goals.
    return tuple(specs) if specs else default_goal_set()


def read_goals(path: Path) -> tuple[GoalSpec, ...]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"goals {path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(f"goals {path}: not UTF-8 text") from None
    return goals_from_text(text, str(path))


def goals_from_text(text: str, source: str) -> tuple[GoalSpec, ...]:
    """Goal manifests in ``text`` (YAML or JSON); ``source`` (a path or URI) names them in errors."""
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML/JSON"
        raise InputError(f"goals {source}: invalid YAML/JSON{at}: {problem}") from None
    return parse_goals(documents, source.rsplit("/", 1)[-1])
