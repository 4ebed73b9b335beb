"""The node bed's journal of machine-wide changes: an undo that meets one change it cannot undo (a
cgroup the kernel keeps busy) still undoes every other one, and keeps only that one for next time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kafka_balancer_dev.errors import BedError
from kafka_balancer_dev.localbed import node_host
from kafka_balancer_dev.localbed.node_host import HostJournal


def test_an_undo_goes_past_a_change_that_will_not_go_and_keeps_only_that_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def busy(entry: dict[str, Any]) -> str | None:
        raise BedError(f"cannot remove cgroup {entry['name']}: [Errno 16] Device or resource busy")

    monkeypatch.setitem(node_host._UNDO, "busy", busy)
    older, newer = tmp_path / "older", tmp_path / "newer"
    older.mkdir()
    newer.write_text("x")
    journal = HostJournal(tmp_path / "journal" / "node.json")
    journal.record("path", path=str(older))
    journal.record("busy", name="kb-node")
    journal.record("path", path=str(newer))

    with pytest.raises(BedError, match=r"could not undo 1 change\(s\).*busy kb-node: cannot remove cgroup"):
        journal.undo()

    assert not older.exists() and not newer.exists()
    assert journal.entries() == [{"kind": "busy", "name": "kb-node"}]

    monkeypatch.setitem(node_host._UNDO, "busy", lambda entry: f"cgroup {entry['name']}")
    assert journal.undo() == ["cgroup kb-node"]
    assert not journal.path.exists()
