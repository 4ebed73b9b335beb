"""The chart's alert rules with the real promtool (provisioned with the bed's Prometheus): the rules file
is valid, its unit tests (alert_rules_test.yaml: series in, alerts out, and pools that must stay quiet)
pass, and the PrometheusRule the chart renders with changed thresholds is still valid."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml
from tests.support.chart import CHART, render

from kafka_balancer_dev.localbed import kube

RULES = CHART / "alerts" / "rules.yaml"
RULE_TESTS = Path(__file__).with_name("alert_rules_test.yaml")
ALERTS = {
    "KafkaBalancerExecutionFailed",
    "KafkaBalancerPoolUnbalanced",
    "KafkaBalancerDrainBlocked",
    "KafkaBalancerSelfHealingBlocked",
    "KafkaBalancerLogDirOffline",
    "KafkaBalancerMoveStuck",
    "KafkaBalancerScoringFailing",
    "KafkaBalancerKafkaUnreachable",
    "KafkaBalancerOperatorAbsent",
    "KafkaBalancerOperatorRestarting",
}


def promtool(tools: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tools / "promtool"), *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_the_rules_file_is_valid_and_has_every_alert(metrics_tools: Path) -> None:
    checked = promtool(metrics_tools, "check", "rules", str(RULES))

    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(ALERTS)} rules found" in checked.stdout
    rules = [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]
    assert {rule["alert"] for rule in rules} == ALERTS
    for rule in rules:
        assert rule["labels"]["severity"] in {"warning", "critical"}, rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]


def test_each_alert_fires_on_its_condition_and_not_on_a_brief_or_excused_one(metrics_tools: Path) -> None:
    tested = promtool(metrics_tools, "test", "rules", str(RULE_TESTS))

    assert tested.returncode == 0, tested.stdout + tested.stderr
    tested_alerts = {
        case["alertname"]
        for test in yaml.safe_load(RULE_TESTS.read_text())["tests"]
        for case in test["alert_rule_test"]
    }
    assert tested_alerts == ALERTS


def test_the_rendered_prometheus_rule_with_other_thresholds_is_valid(
    kube_bed: kube.KubeBed, metrics_tools: Path, tmp_path: Path
) -> None:
    (rule,) = [
        doc
        for doc in render(
            kube_bed,
            "alerts.enabled=true",
            "alerts.rules.KafkaBalancerPoolUnbalanced.for=1h",
            "alerts.labels.team=kafka",
        )
        if doc["kind"] == "PrometheusRule"
    ]
    rendered = tmp_path / "rendered-rules.yaml"
    rendered.write_text(yaml.safe_dump(rule["spec"]))

    checked = promtool(metrics_tools, "check", "rules", str(rendered))

    assert checked.returncode == 0, checked.stdout + checked.stderr
