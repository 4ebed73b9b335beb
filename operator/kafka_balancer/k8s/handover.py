"""The pools handed back on `helm uninstall` and taken again on `helm install`: the chart's pre-delete
and post-install hooks run ``python3 -m kafka_balancer.k8s.handover release|resume``.

With the operator gone nobody removes its finalizer, and deleting a pool (or its CRD) would hang. So
before Helm deletes the operator, ``release`` marks every pool it serves RELEASE_ANNOTATION=REQUESTED
and waits: the operator stops acting on the pool, cancels its moves in flight, removes its throttles
and cordons exactly as a deletion does, then marks it RELEASED, and kopf drops its finalizer, as no
handler wants the pool any more. The pools themselves stay (the CRDs are kept). ``resume`` removes
the mark, so an operator installed again takes its pools back.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from kafka_balancer.errors import KubernetesError
from kafka_balancer.k8s.kube import Kube

RELEASE_ANNOTATION = "kafkabalancer.io/release"
REQUESTED = "requested"
RELEASED = "released"
# kopf's default finalizer, the one the operator's pools carry.
KOPF_FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"
POLL_S = 2.0


def _key(pool: dict[str, Any]) -> str:
    return f"{pool['metadata']['namespace']}/{pool['metadata']['name']}"


def released(pool: dict[str, Any]) -> bool:
    """The operator let the pool go: marked RELEASED and its finalizer gone."""
    meta = pool["metadata"]
    marked = (meta.get("annotations") or {}).get(RELEASE_ANNOTATION) == RELEASED
    return marked and KOPF_FINALIZER not in (meta.get("finalizers") or [])


# Set (a value) or remove (None) one annotation of a pool: namespace, name, key, value.
Annotate = Callable[[str, str, str, str | None], None]


def release(
    annotate: Annotate,
    pools: Callable[[], list[dict[str, Any]]],
    timeout_s: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list[str]:
    """Ask the operator to release every pool; the pools still held after ``timeout_s``."""
    deadline = clock() + timeout_s
    for pool in pools():
        meta = pool["metadata"]
        if (meta.get("annotations") or {}).get(RELEASE_ANNOTATION) != RELEASED:
            annotate(meta["namespace"], meta["name"], RELEASE_ANNOTATION, REQUESTED)
    while True:
        held = sorted(_key(pool) for pool in pools() if not released(pool))
        if not held or clock() > deadline:
            return held
        sleep(POLL_S)


def resume(annotate: Annotate, pools: Callable[[], list[dict[str, Any]]], say: Callable[[str], None]) -> None:
    """Remove the mark of a past release from every pool, so the operator takes them again."""
    for pool in pools():
        meta = pool["metadata"]
        if RELEASE_ANNOTATION in (meta.get("annotations") or {}):
            annotate(meta["namespace"], meta["name"], RELEASE_ANNOTATION, None)
            say(f"pool {_key(pool)} taken back")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m kafka_balancer.k8s.handover", description=__doc__)
    parser.add_argument("action", choices=("release", "resume"))
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--namespace", action="append", help="a namespace the operator serves (repeatable)")
    where.add_argument("--all-namespaces", action="store_true", help="the operator serves every namespace")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds to wait for the release")
    args = parser.parse_args(argv)
    kube = Kube(None)

    def pools() -> list[dict[str, Any]]:
        if args.all_namespaces:
            return kube.list_every_pool()
        return [pool for namespace in args.namespace for pool in kube.list_pools(namespace)]

    def say(line: str) -> None:
        print(line, flush=True)

    try:
        if args.action == "resume":
            resume(kube.annotate_pool, pools, say)
            return 0
        held = release(kube.annotate_pool, pools, args.timeout)
    except KubernetesError as err:
        print(f"handover {args.action}: {err}", file=sys.stderr)
        return 1
    if held:
        print(
            f"the operator did not release {', '.join(held)} within {args.timeout:.0f} s (is it running, "
            "can it reach their Kafka?); `helm uninstall --no-hooks` uninstalls anyway and leaves their "
            "finalizer, moves and throttles behind",
            file=sys.stderr,
        )
        return 1
    say("every pool released")
    return 0


if __name__ == "__main__":
    sys.exit(main())
