"""``make bench``'s pure parts: --merge (benchmarks/runner.py merge_results: another run's figures merged per job,
size and contender, each contender keeping when it was measured) and the task profile behind the Ansible floor
(benchmarks/tasks.py task_profile, combine_profiles; benchmarks/costs.py ansible_floor)."""

from benchmarks import runner, tasks
from benchmarks.costs import ansible_floor


def test_merge_keeps_the_contenders_the_other_run_did_not_measure_with_their_own_time():
    results = {"jobs": {"preflight": {"2000": {
        "n": 2000, "measured_at": "2026-11-22T07:09:58+00:00", "loadavg_end": [11.5, 9.0, 8.0],
        "ours": {"median_s": 12.4}, "naive": {"median_s": 187.0}}}}, "runs": [{"command": "old"}]}
    other = {"jobs": {"preflight": {"2000": {
        "n": 2000, "measured_at": "2026-11-27T09:46:22+00:00", "loadavg_end": [5.0, 4.0, 3.0],
        "ours": {"median_s": 7.68, "measured_at": "2026-11-27T09:45:23+00:00"}, "limit": {"median_s": 1.32}}},
        "owner_references": {"5000": {"n": 5000, "ours": {"median_s": 41.1}}}}, "runs": [{"command": "new"}]}
    runner.merge_results(results, other)
    runner.merge_results(results, other)  # merging again changes nothing
    row = results["jobs"]["preflight"]["2000"]
    assert row["ours"]["median_s"] == 7.68 and row["limit"]["median_s"] == 1.32
    assert row["naive"] == {"median_s": 187.0, "measured_at": "2026-11-22T07:09:58+00:00",
                            "loadavg_end": [11.5, 9.0, 8.0]}  # kept, with the time the old row said
    assert row["measured_at"] == "2026-11-27T09:46:22+00:00"
    assert results["jobs"]["owner_references"]["5000"]["ours"]["median_s"] == 41.1
    assert [r["command"] for r in results["runs"]] == ["old", "new"]


def _task(name, action, seconds=1.0, skipped=False):
    return {"task": {"name": name, "duration": {"start": "2026-11-27T12:00:00.000000Z",
                                                "end": "2026-11-27T12:00:%02d.000000Z" % seconds}},
            "hosts": {"localhost": {"action": action, "skipped": skipped}}}


def test_task_profile_counts_module_and_controller_tasks_without_the_waits():
    data = {"plays": [{"tasks": [
        _task("role : Validate", "ansible.builtin.validate_argument_spec"),
        _task("role : Read the objects", "calico_ops.lifecycle.objects_info", 3),
        _task("role : Apply the CRDs and wait until Established", "calico_ops.lifecycle.manifest_apply", 9),
        _task("role : Settle", "ansible.builtin.set_fact"),
        _task("role : Enterprise only", "ansible.builtin.copy", skipped=True),
        _task("role : Keep the files", "ansible.builtin.copy", 2),
    ]}]}
    profile = tasks.task_profile(data, exclude=r"\bwait")
    assert profile["tasks"] == 6 and profile["skipped"] == 1 and profile["playbooks"] == 1
    # the wait is left out; a skipped task costs what a controller task does
    assert profile["floor_tasks"] == {"module": 2, "control": 3}
    assert profile["by_action"]["calico_ops.lifecycle.manifest_apply"] == [1, 9.0]
    assert profile["by_action"]["(skipped)"] == [1, 1.0]
    assert tasks.task_profile(data)["floor_tasks"] == {"module": 3, "control": 3}


def test_ansible_floor_of_two_plays():
    one = {"tasks": 3, "task_s": 3.0, "skipped": 0, "playbooks": 1, "floor_tasks": {"module": 2, "control": 1},
           "by_action": {}, "slowest": []}
    both = tasks.combine_profiles([one, dict(one), None])
    assert both["playbooks"] == 2 and both["floor_tasks"] == {"module": 4, "control": 2}
    costs = {"startup_s": 2.0, "module_task_s": 0.5, "control_task_s": 0.05}
    assert ansible_floor(both, costs) == 2 * 2.0 + 4 * 0.5 + 2 * 0.05
    assert tasks.combine_profiles([None]) is None
