"""The chart's Grafana dashboard against a real Prometheus scraping the real operator: every panel's
query (and the pool variable's) returns series for a pool the operator balances on the Kafka bed. A
panel naming a metric or label the operator does not export fails here."""

from __future__ import annotations

import json
import re
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed import kube
from kafka_balancer_dev.localbed.kafka import KafkaBed
from kafka_balancer_dev.localbed.prometheus import PrometheusBed

from .conftest import OperatorProcess, wait_for
from .objects import OWN_TOPIC_SPREAD, PLAN_TIMEOUT_S, apply, get, goal, pool, skewed_topic

DASHBOARD = (
    Path(__file__).resolve().parents[2] / "charts" / "kafka-balancer" / "dashboards" / "kafka-balancer.json"
)
# Grafana's built-in intervals, as Grafana would fill them in for a short time range.
BUILT_INS = {"$__rate_interval": "1m", "$__range": "10m", "$__interval": "15s"}
LABEL_VALUES = re.compile(r"label_values\((?P<metric>[^,]+),\s*(?P<label>\w+)\)")


def panel_queries(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(panel title, expr) of every target of every panel, rows' nested panels included."""
    found = []
    for panel in dashboard["panels"]:
        for inner in [panel, *panel.get("panels", [])]:
            found += [(inner["title"], target["expr"]) for target in inner.get("targets", [])]
    return found


def substituted(expr: str, pool_key: str) -> str:
    for name, value in BUILT_INS.items():
        expr = expr.replace(name, value)
    # A pool key (namespace/name) holds no regex metacharacter but "." (which matches itself too);
    # escaping it would put "\\-" into a PromQL string, which Prometheus refuses.
    return expr.replace("${pool}", pool_key).replace("$pool", pool_key)


@pytest.fixture
def operator_prometheus(
    operator: OperatorProcess, metrics_tools: Path, tmp_path: Path
) -> Iterator[PrometheusBed]:
    """A real Prometheus scraping the operator's metrics endpoint every second."""
    target = urlsplit(operator.metrics).netloc
    prometheus = PrometheusBed(metrics_tools, tmp_path / "prometheus", {}, jobs={"kafka-balancer": [target]})
    try:
        prometheus.start()
    except BedError as err:
        pytest.fail(f"Prometheus did not start: {err}", pytrace=False)
    try:
        yield prometheus
    finally:
        prometheus.stop()


def test_every_dashboard_query_returns_series_for_a_balanced_pool(
    kube_bed: kube.KubeBed,
    kafka_bed: KafkaBed,
    operator: OperatorProcess,
    operator_prometheus: PrometheusBed,
    namespace: str,
) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    topic = "e2e-dashboard"
    skewed_topic(kafka_bed, topic)
    apply(
        kube_bed,
        namespace,
        pool("main", kafka_bed.bootstrap_servers, "Auto", topic),
        goal("replicas", "main", type=OWN_TOPIC_SPREAD, rangePercent=10),
    )
    pool_key = f"{namespace}/main"
    wait_for(
        lambda: get(kube_bed, namespace, "bp", "main").get("status", {}).get("plan"),
        PLAN_TIMEOUT_S,
        "a plan in the pool's status",
        operator,
    )
    queries = [(title, substituted(expr, pool_key)) for title, expr in panel_queries(dashboard)]
    assert len(queries) >= 20 and all("$" not in expr for _, expr in queries), queries

    def answers(title: str, expr: str) -> bool:
        try:
            return bool(operator_prometheus.query(expr))
        except urllib.error.HTTPError as err:  # Prometheus refuses the query itself
            pytest.fail(f"panel {title}: {expr}: {err.read().decode(errors='replace')}", pytrace=False)

    def empty() -> list[tuple[str, str]]:
        return [(title, expr) for title, expr in queries if not answers(title, expr)]

    missing: list[tuple[str, str]] = []

    def all_answer() -> bool:
        missing[:] = empty()
        return not missing

    deadline_s = 120.0
    try:
        wait_for(all_answer, deadline_s, "every panel's query to return series", operator)
    except pytest.fail.Exception:
        lines = "\n".join(f"  {title}: {expr}" for title, expr in missing)
        pytest.fail(f"panel queries with no series after {deadline_s:.0f}s:\n{lines}", pytrace=False)

    (variable,) = [v for v in dashboard["templating"]["list"] if v["name"] == "pool"]
    wanted = LABEL_VALUES.fullmatch(variable["definition"])
    assert wanted is not None, variable["definition"]
    values = {s["metric"][wanted["label"]] for s in operator_prometheus.query(wanted["metric"])}  # type: ignore[index]
    assert pool_key in values
    (source,) = [v for v in dashboard["templating"]["list"] if v["type"] == "datasource"]
    assert source["query"] == "prometheus"
    datasources = {json.dumps(t["datasource"]) for p in dashboard["panels"] for t in p.get("targets", [])}
    assert datasources == {json.dumps({"type": "prometheus", "uid": "${datasource}"})}
