"""The JSON text of the snapshots and plans we write: the same document back, a line per element."""

from __future__ import annotations

import json
import math

import pytest

from kafka_balancer.formats.json_text import document_text


def test_the_text_is_the_document_with_a_line_per_element() -> None:
    brokers = [{"id": 1, "rack": "a"}, {"id": 2, "rack": None}]
    partition = {"topic": 't\n"x', "partition": 0, "load": {"disk": 0.1 + 0.2}}
    document = {
        "version": 1,
        "brokers": brokers,
        "partitions": [partition],
        "empty": [],
        "nested": {"a": [1, 2]},
    }
    text = document_text(document)
    assert json.loads(text) == document
    lines = text.splitlines()
    assert lines[0] == "{" and lines[-1] == "}" and text.endswith("}\n")
    # Each broker and each partition is one line, whole: grep finds a partition with its load.
    assert [line.strip().rstrip(",") for line in lines if '"id"' in line] == [json.dumps(b) for b in brokers]
    partition_line = next(line for line in lines if '"topic"' in line)
    assert json.loads(partition_line.strip().rstrip(",")) == partition
    assert len(lines) == 12


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_numbers_json_has_no_words_for_are_refused(value: float) -> None:
    with pytest.raises(ValueError):
        document_text({"partitions": [{"load": {"disk": value}}]})
    with pytest.raises(ValueError):
        document_text({"seconds": value})
