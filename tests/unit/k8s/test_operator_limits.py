"""What one operator process runs at once: the limits' settings, and embedded scoring runs (each a
JVM of its own) held to theirs. The pool passes and executions are held to theirs in
test_orchestration.py."""

from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kafka_balancer.errors import InputError, ScoringError
from kafka_balancer.k8s.settings import Limits, OperatorSettings
from kafka_balancer.scoring.launch import EmbeddedScorer
from tests.unit.k8s.test_scoring_runs import request


def test_the_limits_come_from_the_environment_with_defaults() -> None:
    assert OperatorSettings.from_env({}).limits == Limits(executions=4, syncs=8, embedded_jobs=1)
    env = {
        "KAFKA_BALANCER_MAX_EXECUTIONS": "2",
        "KAFKA_BALANCER_MAX_SYNCS": "16",
        "KAFKA_BALANCER_MAX_EMBEDDED_JOBS": "3",
    }
    assert OperatorSettings.from_env(env).limits == Limits(executions=2, syncs=16, embedded_jobs=3)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("0", "KAFKA_BALANCER_MAX_SYNCS: at least 1, got 0"),
        ("many", "KAFKA_BALANCER_MAX_SYNCS: 'many' is not a number"),
    ],
)
def test_a_limit_that_is_not_a_whole_number_from_1_is_refused(value: str, said: str) -> None:
    with pytest.raises(InputError, match=said):
        OperatorSettings.from_env({"KAFKA_BALANCER_MAX_SYNCS": value})


def test_embedded_scoring_runs_one_jvm_at_a_time_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    running: list[int] = []
    most = [0]
    lock = threading.Lock()

    def job(argv: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        # The job's child process, played: how many run at once is what is measured.
        with lock:
            running.append(1)
            most[0] = max(most[0], len(running))
        time.sleep(0.2)
        with lock:
            running.pop()
        return subprocess.CompletedProcess(argv, 1, "", "played")

    monkeypatch.setattr(subprocess, "run", job)  # launch.py calls subprocess.run
    scorer = EmbeddedScorer(tmp_path, jobs=1)
    failures: list[BaseException] = []

    def score(run: int) -> None:
        try:
            scorer.score(replace(request(f"{run:016d}"), pool=f"pool-{run}"))
        except ScoringError as err:
            failures.append(err)

    pools = [threading.Thread(target=score, args=(n,)) for n in range(4)]
    for thread in pools:
        thread.start()
    for thread in pools:
        thread.join(30)
    assert len(failures) == 4 and most[0] == 1, (failures, most)
