"""``make bench``'s --merge (benchmarks/run.py merge_results): another run's figures merged per job, size and
contender, each contender keeping when it was measured."""

import importlib.util
from pathlib import Path

RUN_PY = Path(__file__).resolve().parents[2] / "benchmarks" / "run.py"


def _load():
    spec = importlib.util.spec_from_file_location("bench_run", str(RUN_PY))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


run = _load()


def test_merge_keeps_the_contenders_the_other_run_did_not_measure_with_their_own_time():
    results = {"jobs": {"preflight": {"2000": {
        "n": 2000, "measured_at": "2026-11-22T07:09:58+00:00", "loadavg_end": [11.5, 9.0, 8.0],
        "ours": {"median_s": 12.4}, "naive": {"median_s": 187.0}}}}, "runs": [{"command": "old"}]}
    other = {"jobs": {"preflight": {"2000": {
        "n": 2000, "measured_at": "2026-11-27T09:46:22+00:00", "loadavg_end": [5.0, 4.0, 3.0],
        "ours": {"median_s": 7.68, "measured_at": "2026-11-27T09:45:23+00:00"}, "limit": {"median_s": 1.32}}},
        "owner_references": {"5000": {"n": 5000, "ours": {"median_s": 41.1}}}}, "runs": [{"command": "new"}]}
    run.merge_results(results, other)
    run.merge_results(results, other)  # merging again changes nothing
    row = results["jobs"]["preflight"]["2000"]
    assert row["ours"]["median_s"] == 7.68 and row["limit"]["median_s"] == 1.32
    assert row["naive"] == {"median_s": 187.0, "measured_at": "2026-11-22T07:09:58+00:00",
                            "loadavg_end": [11.5, 9.0, 8.0]}  # kept, with the time the old row said
    assert row["measured_at"] == "2026-11-27T09:46:22+00:00"
    assert results["jobs"]["owner_references"]["5000"]["ours"]["median_s"] == 41.1
    assert [r["command"] for r in results["runs"]] == ["old", "new"]
