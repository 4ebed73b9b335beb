"""``kafka-balancer pool``: the pools of a cluster through the kubeconfig, as ``kubectl`` users expect:
``get`` and ``describe`` what the operator reports, ``approve`` the plan a pool shows, ``pause`` and
``resume`` it, ``cancel`` the plan it executes. What changes a pool is what a person would write with
``kubectl``: the approval and cancel annotations, ``spec.paused``; the operator does the rest.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from kafka_balancer.errors import InputError, KafkaBalancerError
from kafka_balancer.k8s.kube import Kube
from kafka_balancer.reconcile.approval import APPROVE_ANNOTATION, CANCEL_ANNOTATION

OUTPUTS = ("table", "json", "yaml")
# What `kubectl get bp -o wide` shows, in its order, for one look at every pool.
COLUMNS = ("NAME", "MODE", "PAUSED", "PHASE", "MOVES", "DATA", "ETA", "PLAN", "READY")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, parser_class=type(parser))
    get = actions.add_parser("get", help="list pools, or show one, with what the operator reports")
    get.add_argument("name", nargs="?", help="a pool's name (default: every pool of the namespace)")
    get.add_argument("-A", "--all-namespaces", action="store_true", help="pools of every namespace")
    get.add_argument("-o", "--output", choices=OUTPUTS, default="table")
    describe = actions.add_parser("describe", help="one pool: its plan, execution, brokers and conditions")
    describe.add_argument("name")
    describe.add_argument("-o", "--output", choices=OUTPUTS, default="table")
    approve = actions.add_parser("approve", help="approve the plan a Manual pool shows")
    approve.add_argument("name")
    approve.add_argument(
        "--plan", help="the plan id you reviewed: refused if the pool shows another one (default: its plan)"
    )
    for action, text in (("pause", "pause a pool at its next batch"), ("resume", "resume a paused pool")):
        paused = actions.add_parser(action, help=text)
        paused.add_argument("name")
    cancel = actions.add_parser(
        "cancel", help="cancel the plan a pool executes: its moves in flight cancelled, its throttles removed"
    )
    cancel.add_argument("name")
    cancel.add_argument(
        "--plan", help="the plan id to cancel: refused if the pool shows another one (default: its plan)"
    )
    for sub in (get, describe, approve, cancel, *(actions.choices[a] for a in ("pause", "resume"))):
        sub.add_argument("-n", "--namespace", help="default: the kubeconfig context's namespace")
        sub.add_argument("--kubeconfig", help="default: $KUBECONFIG, else ~/.kube/config")


def run_pool(args: argparse.Namespace) -> int:
    kube, default_namespace = Kube.like_kubectl(args.kubeconfig)
    namespace = args.namespace or default_namespace
    if args.action == "get":
        if args.name is not None:
            print(_render([_pool(kube, namespace, args.name)], args.output, with_namespace=False))
        elif args.all_namespaces:
            print(_render(kube.list_every_pool(), args.output, with_namespace=True))
        else:
            print(_render(kube.list_pools(namespace), args.output, with_namespace=False))
        return 0
    pool = _pool(kube, namespace, args.name)
    if args.action == "describe":
        print(
            _render([pool], args.output, with_namespace=False) if args.output != "table" else describe(pool)
        )
        return 0
    where = f"BrokerPool {namespace}/{args.name}"
    if args.action == "approve":
        plan = approvable_plan(pool, args.plan)
        kube.annotate_pool(namespace, args.name, APPROVE_ANNOTATION, plan)
        figures = _plan_figures(pool)
        print(f"{where}: plan {plan} approved{f' ({figures})' if figures else ''}")
        return 0
    if args.action == "cancel":
        plan = cancellable_plan(pool, args.plan)
        kube.annotate_pool(namespace, args.name, CANCEL_ANNOTATION, plan)
        print(f"{where}: cancel of plan {plan} requested")
        return 0
    paused = args.action == "pause"
    kube.patch_pool_spec(namespace, args.name, {"paused": paused})
    print(f"{where}: {'paused at its next batch' if paused else 'resumed'}")
    return 0


def _pool(kube: Kube, namespace: str, name: str) -> dict[str, Any]:
    found = kube.read_pool(namespace, name)
    if found is None:
        raise InputError(f"BrokerPool {namespace}/{name}: not found")
    return found


def approvable_plan(pool: Mapping[str, Any], reviewed: str | None) -> str:
    """The plan id to approve: the one the pool shows, which ``reviewed`` must name when given."""
    meta, spec, status = pool["metadata"], pool.get("spec") or {}, pool.get("status") or {}
    where = f"BrokerPool {meta.get('namespace')}/{meta['name']}"
    mode = spec.get("mode", "Manual")
    if mode != "Manual":
        raise InputError(f"{where} is in mode {mode}: only a Manual pool's plans wait for approval")
    shown = (status.get("plan") or {}).get("id")
    if not shown:
        raise PlanNotShown(f"{where} shows no plan to approve yet (status.plan.id is empty)")
    if reviewed is not None and reviewed != shown:
        raise InputError(f"--plan {reviewed}: {where} shows plan {shown} now; review that one and approve it")
    return str(shown)


def cancellable_plan(pool: Mapping[str, Any], named: str | None) -> str:
    """The plan id to cancel: the one the pool shows, which ``named`` must name when given, and which
    must be executing (or paused mid-way) or approved; anything else has nothing to cancel."""
    meta, status = pool["metadata"], pool.get("status") or {}
    where = f"BrokerPool {meta.get('namespace')}/{meta['name']}"
    shown = (status.get("plan") or {}).get("id")
    if not shown:
        raise InputError(f"{where} shows no plan (status.plan.id is empty): nothing to cancel")
    if named is not None and named != shown:
        raise InputError(f"--plan {named}: {where} shows plan {shown}, not {named}; nothing was cancelled")
    execution = status.get("execution") or {}
    phase = execution.get("phase") if execution.get("planId") == shown else None
    approved = (meta.get("annotations") or {}).get(APPROVE_ANNOTATION) == shown
    if phase == "Cancelled":
        raise InputError(f"{where}: plan {shown} is cancelled already")
    if phase not in ("Running", "Paused") and not approved:
        ran = f" (its execution: {phase})" if phase else ""
        raise InputError(f"{where}: plan {shown} is neither executing nor approved{ran}: nothing to cancel")
    return str(shown)


class PlanNotShown(KafkaBalancerError):
    """The pool has no plan to approve (yet): exit 1, as the state may change by itself."""


def _plan_figures(pool: Mapping[str, Any]) -> str:
    plan = (pool.get("status") or {}).get("plan") or {}
    parts = []
    if "movesTotal" in plan:
        parts.append(f"{plan['movesTotal']} moves")
    if plan.get("dataToMove"):
        parts.append(f"{plan['dataToMove']} to copy")
    return ", ".join(parts)


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), {})


def row(pool: Mapping[str, Any]) -> tuple[str, ...]:
    spec, status = pool.get("spec") or {}, pool.get("status") or {}
    plan, execution = status.get("plan") or {}, status.get("execution") or {}
    return (
        str(pool["metadata"]["name"]),
        str(spec.get("mode", "Manual")),
        "yes" if spec.get("paused") else "no",
        str(execution.get("phase", "")),
        str(plan.get("moves", "")),
        str(plan.get("dataToMove", "")),
        str(execution.get("eta", "")),
        str(plan.get("id", "")),
        str(_condition(status, "Ready").get("status", "")),
    )


def _render(pools: Sequence[Mapping[str, Any]], output: str, with_namespace: bool) -> str:
    if output == "json":
        return json.dumps(pools[0] if len(pools) == 1 and not with_namespace else list(pools), indent=2)
    if output == "yaml":
        return yaml.safe_dump(list(pools), sort_keys=False).rstrip()
    head = ("NAMESPACE", *COLUMNS) if with_namespace else COLUMNS
    rows = [
        ((str(p["metadata"].get("namespace", "")), *row(p)) if with_namespace else row(p))
        for p in sorted(pools, key=lambda p: (p["metadata"].get("namespace", ""), p["metadata"]["name"]))
    ]
    if not rows:
        return "No BrokerPools found."
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head))]
    return "\n".join(
        "   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in (head, *rows)
    )


def describe(pool: Mapping[str, Any]) -> str:
    """What a person looks for, in the order they look: the plan, the execution, the brokers, then
    every condition with its message."""
    meta, spec, status = pool["metadata"], pool.get("spec") or {}, pool.get("status") or {}
    lines = [
        f"Name:        {meta['name']}",
        f"Namespace:   {meta.get('namespace', '')}",
        f"Mode:        {spec.get('mode', 'Manual')}{' (paused)' if spec.get('paused') else ''}",
        f"Kafka:       {(spec.get('kafka') or {}).get('bootstrapServers', '')}",
    ]
    plan = status.get("plan") or {}
    if plan:
        lines.append(f"Plan:        {plan.get('id', '')} {_plan_figures(pool)}".rstrip())
        approved = (meta.get("annotations") or {}).get(APPROVE_ANNOTATION)
        if approved:
            lines.append(f"Approved:    {approved}")
        cancel = (meta.get("annotations") or {}).get(CANCEL_ANNOTATION)
        if cancel:
            lines.append(f"Cancel of:   {cancel}")
    execution = status.get("execution") or {}
    if execution:
        total = sum(int(execution.get(k, 0)) for k in ("movesDone", "movesInFlight", "movesPending"))
        done = f"{execution.get('movesDone', 0)}/{total} moves"
        eta = f", ETA {execution['eta']}" if execution.get("eta") else ""
        lines.append(f"Execution:   {execution.get('phase', '')} {execution.get('planId', '')}, {done}{eta}")
    brokers = status.get("brokers") or []
    if brokers:
        lines.append("Brokers:")
        lines.extend(f"  {b['id']:<6} {b.get('state', '')}" for b in sorted(brokers, key=lambda b: b["id"]))
    conditions = status.get("conditions") or []
    if conditions:
        lines.append("Conditions:")
        lines.extend(
            f"  {c.get('type', '')}={c.get('status', '')} ({c.get('reason', '')}): {c.get('message', '')}"
            for c in conditions
        )
    return "\n".join(lines)
