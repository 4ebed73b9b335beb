"""The execution state of a large plan stored in parts (k8s/state_mirror.py over blobs.store_parts):
what a step writes, what a successor reads back, and what it refuses. In-memory Kubernetes; the real
apiserver is in tests/integration/test_config_map_blobs.py."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from kafka_balancer.errors import ExecutionFenced, UnreadableConfigMap
from kafka_balancer.k8s import blobs, state_mirror
from kafka_balancer.k8s.kube import json_text
from kafka_balancer.k8s.port import PoolId
from kafka_balancer.k8s.state_mirror import HEAD_KEY, PART_MOVES, STATE_KEY, StateMirror
from kafka_balancer.kafka.execution_state import ExecutionState, Move, MoveStatus, state_document
from tests.unit.k8s.kube_fake import FakeKube

POOL = PoolId("kafka", "main", "uid-main")
MOVES = 5 * PART_MOVES + 17


@dataclass
class CountingKube(FakeKube):
    """FakeKube that records the names of the ConfigMaps written."""

    written: list[str] = field(default_factory=list)

    def write_config_map(
        self,
        namespace: str,
        name: str,
        owner: PoolId,
        data: Mapping[str, str],
        binary: Mapping[str, bytes] | None = None,
    ) -> None:
        self.written.append(name)
        super().write_config_map(namespace, name, owner, data, binary)


def big_state(moves: int = MOVES) -> ExecutionState:
    built = tuple(Move(f"t{i // 50}", i % 50, (1, 2, 3), (4, 2, 3), size=1000 + i) for i in range(moves))
    return ExecutionState(built, created_at=1.0, updated_at=1.0, throttle_rate=1000)


def stepped(state: ExecutionState, indexes: range, status: MoveStatus) -> ExecutionState:
    moves = list(state.moves)
    for i in indexes:
        moves[i] = replace(moves[i], status=status, started_at=2.0, progress_bytes=7)
    return replace(state, moves=tuple(moves), updated_at=2.0)


def parts_of(kube: FakeKube) -> set[str]:
    return {name for (_, name) in kube.config_maps if name.startswith("main-execution-part-")}


def test_a_large_state_round_trips_exactly_through_its_parts() -> None:
    kube = FakeKube()
    state = stepped(big_state(), range(40, 90), MoveStatus.IN_FLIGHT)

    StateMirror(kube, POOL).write("p1", state, force=True)

    head = kube.config_maps[("kafka", "main-execution")]
    assert STATE_KEY not in head.data and len(head.data[blobs.PARTS].split()) == 6 == len(parts_of(kube))
    assert StateMirror(kube, POOL).load() == ("p1", state)


def test_a_step_writes_the_head_and_only_the_parts_whose_moves_changed_and_deletes_the_replaced() -> None:
    kube = CountingKube()
    mirror = StateMirror(kube, POOL)
    state = big_state()
    mirror.write("p1", state, force=True)
    before = parts_of(kube)
    kube.written.clear()

    state = stepped(state, range(PART_MOVES - 10, PART_MOVES + 40), MoveStatus.IN_FLIGHT)  # parts 0 and 1
    assert mirror.write("p1", state)

    named = kube.config_maps[("kafka", "main-execution")].data[blobs.PARTS].split()
    assert sorted(kube.written) == sorted(
        ["main-execution", *(f"main-execution-part-{d}" for d in named[:2])]
    )
    assert len(parts_of(kube)) == 6 and len(before - parts_of(kube)) == 2
    assert StateMirror(kube, POOL).load() == ("p1", state)


def test_a_successor_writes_on_from_the_parts_it_read_without_rewriting_them() -> None:
    kube = CountingKube()
    state = big_state()
    StateMirror(kube, POOL).write("p1", state, force=True)
    successor = StateMirror(kube, POOL)
    assert successor.load() == ("p1", state)
    kube.written.clear()

    state = stepped(state, range(3 * PART_MOVES, 3 * PART_MOVES + 50), MoveStatus.DONE)
    assert successor.write("p1", state)

    assert len(kube.written) == 2  # the head and part 3
    assert StateMirror(kube, POOL).load() == ("p1", state)


def test_a_stale_writer_is_fenced_and_cannot_touch_the_current_parts() -> None:
    kube = FakeKube()
    first = StateMirror(kube, POOL)
    first.load()
    state = big_state()
    first.write("p1", state, force=True)
    successor = StateMirror(kube, POOL)
    successor.load()
    current = stepped(state, range(0, 50), MoveStatus.IN_FLIGHT)
    successor.write("p1", current, force=True)

    with pytest.raises(ExecutionFenced, match="written by another process"):
        first.write("p1", stepped(state, range(0, 50), MoveStatus.CANCELLED), force=True)
    assert StateMirror(kube, POOL).load() == ("p1", current)


def test_a_state_the_previous_version_wrote_in_one_document_is_read_and_replaced_by_parts() -> None:
    kube = FakeKube()
    state = big_state()
    old = json_text(state_document(state)).encode()
    blobs.store_if(kube, "kafka", "main-execution", POOL, {"plan.id": "p1"}, STATE_KEY, old, blobs.ABSENT)
    assert "state.json.gz" in kube.config_maps[("kafka", "main-execution")].binary  # 2 MB: gzipped

    mirror = StateMirror(kube, POOL)
    assert mirror.load() == ("p1", state)
    state = stepped(state, range(50), MoveStatus.IN_FLIGHT)
    assert mirror.write("p1", state)

    assert HEAD_KEY in kube.config_maps[("kafka", "main-execution")].data
    assert StateMirror(kube, POOL).load() == ("p1", state)


def test_a_small_state_stays_one_plain_document() -> None:
    kube = FakeKube()
    state = big_state(PART_MOVES)

    StateMirror(kube, POOL).write("p1", state, force=True)

    head = kube.config_maps[("kafka", "main-execution")]
    assert json.loads(head.data[STATE_KEY])["moves"][0]["topic"] == "t0" and not parts_of(kube)


@pytest.mark.parametrize("edit", ["missing", "swapped", "named"])
def test_a_part_missing_or_edited_is_refused(edit: str) -> None:
    kube = FakeKube()
    StateMirror(kube, POOL).write("p1", big_state(), force=True)
    head = kube.config_maps[("kafka", "main-execution")]
    digests = head.data[blobs.PARTS].split()
    second = ("kafka", f"main-execution-part-{digests[1]}")
    if edit == "missing":
        del kube.config_maps[second]
    elif edit == "swapped":
        first = kube.config_maps[("kafka", f"main-execution-part-{digests[0]}")]
        kube.write_config_map("kafka", second[1], POOL, {}, first.binary)
    else:
        kube.write_config_map("kafka", "main-execution", POOL, {**head.data, blobs.PARTS: "../x"}, {})

    with pytest.raises(UnreadableConfigMap):
        StateMirror(kube, POOL).load()


def test_parts_cut_otherwise_are_all_written_anew_and_the_state_stays_exact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kube = CountingKube()
    state = big_state()
    with monkeypatch.context() as patched:  # another version's cut
        patched.setattr(state_mirror, "PART_MOVES", 700)
        StateMirror(kube, POOL).write("p1", state, force=True)
    successor = StateMirror(kube, POOL)
    assert successor.load() == ("p1", state)
    kube.written.clear()

    state = stepped(state, range(50), MoveStatus.IN_FLIGHT)
    assert successor.write("p1", state)

    assert len(kube.written) == 1 + 6 and len(parts_of(kube)) == 6
    assert StateMirror(kube, POOL).load() == ("p1", state)


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda doc: doc.pop("createdAt"), "'createdAt'"),
        (lambda doc: doc["moves"][0].pop("topic"), "'topic'"),
        (lambda doc: doc.update(order="fastest"), "'fastest'"),
        (lambda doc: doc["moves"][0].update(status=7), "7"),
    ],
    ids=["no createdAt", "a move without its topic", "an unknown order", "a status of another type"],
)
def test_a_state_edited_by_hand_is_refused_naming_the_config_map(edit: Any, said: str) -> None:
    kube = FakeKube()
    StateMirror(kube, POOL).write("p1", big_state(3), force=True)
    head = kube.config_maps[("kafka", "main-execution")]
    document = json.loads(head.data[STATE_KEY])
    edit(document)
    kube.write_config_map("kafka", "main-execution", POOL, {**head.data, STATE_KEY: json.dumps(document)}, {})

    with pytest.raises(UnreadableConfigMap, match=f"ConfigMap kafka/main-execution: .*{said}"):
        StateMirror(kube, POOL).load()


def test_a_state_that_is_not_json_is_refused() -> None:
    kube = FakeKube()
    StateMirror(kube, POOL).write("p1", big_state(3), force=True)
    head = kube.config_maps[("kafka", "main-execution")]
    kube.write_config_map("kafka", "main-execution", POOL, {**head.data, STATE_KEY: "{moves: ["}, {})

    with pytest.raises(UnreadableConfigMap, match="ConfigMap kafka/main-execution: "):
        StateMirror(kube, POOL).load()
