"""Every alert of the chart tells whoever it pages where its runbook is, and that runbook exists."""

from __future__ import annotations

import re

import yaml

from tests.support.readme import ROOT, anchors

RULES = ROOT / "charts" / "kafka-balancer" / "alerts" / "rules.yaml"
OPERATIONS = ROOT / "docs" / "operations.md"


def test_each_alert_names_its_runbook_in_docs_operations() -> None:
    rules = [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]
    runbooks = OPERATIONS.read_text().split("\n## Runbooks\n", 1)[1].split("\n## ", 1)[0]

    assert rules
    for rule in rules:
        named = re.findall(r"Runbook: docs/operations\.md#([\w-]+)\.", rule["annotations"]["description"])
        assert named == [rule["alert"].lower()], rule["alert"]
        assert named[0] in anchors(OPERATIONS), f"docs/operations.md has no section {rule['alert']}"
        section = runbooks.split(f"\n### {rule['alert']}\n", 1)[1].split("\n### ", 1)[0]
        for part in ("What it means:", "How to confirm:", "What to do:"):
            assert part in section, f"the runbook of {rule['alert']} does not say {part}"
