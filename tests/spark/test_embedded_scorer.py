"""The Embedded engine: the real job in a child process on local Spark, as the operator runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_balancer.api import Scoring
from kafka_balancer.errors import ScoringError
from kafka_balancer.scoring.launch import EmbeddedScorer, ScoringRequest
from tests.support.scoring_inputs import NO_GOALS, STEP, store_with_history, topology


def request(samples: Path, run: str) -> ScoringRequest:
    return ScoringRequest(
        namespace="team-a",
        pool="main",
        pool_uid="uid-1",
        run=run,
        samples=samples,
        topology=topology(),
        goals=NO_GOALS,
        window_ms=STEP,
        windows=2,
        spec=Scoring(),
    )


def test_a_run_scores_the_store_and_a_rerun_reads_the_finished_outputs(tmp_path: Path) -> None:
    store = store_with_history(tmp_path / "store")
    scorer = EmbeddedScorer(tmp_path / "work", timeout_s=1200)

    result = scorer.score(request(store.root, "0001700000000000"))
    print(f"\nembedded run: {result.seconds:.1f} s, job {result.manifest['durationSeconds']} s")

    assert result.manifest["rows"]["partitions"] == 6
    loads = {(p["topic"], p["partition"]): p["load"] for p in result.snapshot["partitions"]}
    assert loads[("orders", 0)]["networkIn"] > 5 * loads[("orders", 1)]["networkIn"]
    again = scorer.score(request(store.root, "0001700000000000"))
    assert again.snapshot == result.snapshot
    assert again.seconds < 5  # read back, not recomputed


def test_a_failing_job_raises_its_own_message(tmp_path: Path) -> None:
    empty = tmp_path / "store"
    empty.mkdir()
    with pytest.raises(
        ScoringError, match=r"failed: score: bad input: samples .*no partition_samples/ directory"
    ):
        EmbeddedScorer(tmp_path / "work", timeout_s=600).score(request(empty, "0000000000001"))
