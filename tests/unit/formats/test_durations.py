"""Durations as the CRs write them and as kubectl prints them: one grammar for the CR's
``spec.warmUp.duration`` and the command line's flags, one way of printing them to people."""

from __future__ import annotations

import pytest

from kafka_balancer.api import WarmUp
from kafka_balancer.durations import age_text, parse_duration


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("10m", 600), ("1h30m", 5400), ("2h", 7200)])
def test_the_cr_reads_the_grammar_as_parse_duration_does(text: str, seconds: int) -> None:
    assert parse_duration(text) == WarmUp(duration=text).seconds == seconds


def test_bare_seconds_only_where_asked() -> None:
    assert parse_duration("600", bare_seconds=True) == 600
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration("600")


@pytest.mark.parametrize("text", ["", "90", "1.5h", "5d", "m", "1m1h", " 10m"])
def test_the_crs_grammar_refuses_what_the_crd_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (-3, "0s"),
        (45, "45s"),
        (119, "119s"),
        (125, "2m5s"),
        (300, "5m"),
        (754, "12m"),
        (10_800 + 240, "3h4m"),
        (7_200, "120m"),
        (28_800, "8h"),
        (5 * 86_400 + 7_200 + 59, "5d2h"),
        (10 * 86_400, "10d"),
        (400 * 86_400, "400d"),
        (3 * 365 * 86_400 + 5 * 86_400, "3y5d"),
        (9 * 365 * 86_400, "9y"),
    ],
)
def test_durations_print_as_kubectl_prints_ages(seconds: float, text: str) -> None:
    assert age_text(seconds) == text
