"""The Kafka clients' log lines: librdkafka's repeats are let through once a minute, with a count."""

from __future__ import annotations

import logging

from kafka_balancer.kafka.client_log import Repeats

FAIL = "FAIL [thrd:k:9092/bootstrap]: Connect to k:9092 failed: refused (after %dms in state CONNECT)"


def _record(msg: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("kafka_balancer.librdkafka", logging.ERROR, __file__, 1, msg, args, None)


def test_a_repeated_line_passes_once_a_minute_and_then_says_how_many_were_left_out() -> None:
    now = [0.0]
    repeats = Repeats(every_s=60, clock=lambda: now[0])
    passed = []
    for tick in range(300):  # one failed connect every 0.3 s for 90 s
        now[0] = tick * 0.3
        record = _record(FAIL, tick % 3)
        if repeats.filter(record):
            passed.append(record.getMessage())

    assert len(passed) == 2
    assert passed[0] == FAIL % 0
    # The line after a minute: the 199 left out in between are counted, not lost without a trace.
    assert passed[1].endswith("(199 more like it in the last 60s)")


def test_different_lines_are_not_taken_for_repeats() -> None:
    repeats = Repeats(every_s=60, clock=lambda: 0.0)
    assert repeats.filter(_record("FAIL broker 1 down"))
    assert repeats.filter(_record("FAIL broker 2 down"))
    assert not repeats.filter(_record("FAIL broker 1 down"))
