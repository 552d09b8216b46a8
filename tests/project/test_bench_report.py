"""The pure parts of ``make bench`` (benchmarks/report.py): median, ratio, the prediction that decides whether a
naive run is skipped, the Markdown table (predictions never in the measured columns) and the plot series."""

import importlib.util
from pathlib import Path

import pytest

REPORT_PY = Path(__file__).resolve().parents[2] / "benchmarks" / "report.py"


def _load():
    spec = importlib.util.spec_from_file_location("bench_report", str(REPORT_PY))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


report = _load()


def test_median_odd_even_and_unsorted():
    assert report.median([3.0, 1.0, 2.0]) == 2.0
    assert report.median([4, 1, 3, 2]) == 2.5
    assert report.median([7.5]) == 7.5


def test_median_of_nothing_is_an_error():
    with pytest.raises(ValueError):
        report.median([])


@pytest.mark.parametrize("naive, ours, expected", [
    (100.0, 10.0, 10.0),
    (10.0, 3.0, 3.3),
    (1.0, 2.0, 0.5),
    (None, 2.0, None),
    (5.0, None, None),
    (5.0, 0, None),
])
def test_ratio(naive, ours, expected):
    assert report.ratio(naive, ours) == expected


def test_prediction_uses_the_largest_smaller_measured_size():
    measured = {10: 5.0, 100: 120.0}
    assert report.predict(measured, 1000) == (1200.0, 100)
    assert report.predict(measured, 50) == (25.0, 10)
    assert report.predict(measured, 10) == (None, None)
    assert report.predict({}, 100) == (None, None)


def test_a_run_over_the_budget_is_skipped_and_one_under_it_is_not():
    measured = {100: 120.0}
    assert report.should_skip(measured, 1000, 600) == (True, 1200.0, 100)
    assert report.should_skip(measured, 400, 600) == (False, 480.0, 100)
    # nothing measured below: cannot predict, so the run is not skipped
    assert report.should_skip({}, 100, 600) == (False, None, None)
    # no budget: never skipped
    assert report.should_skip(measured, 1000, None) == (False, 1200.0, 100)


RESULTS = {"jobs": {
    "owner_references": {
        "1000": {"n": 1000, "unit": "dependents",
                 "ours": {"median_s": 12.7, "reads": 2138, "writes": 2006, "changed": 2000, "rerun_writes": 0},
                 "naive": {"predicted_s": 1350.0, "from_n": 100, "prediction": True,
                           "not_measured": "predicted 1350 s > budget 600 s"}},
        "100": {"n": 100, "unit": "dependents",
                "ours": {"median_s": 3.1, "reads": 200, "writes": 202, "changed": 200, "rerun_writes": 0},
                "naive": {"median_s": 135.0, "reads": 402, "writes": 200}},
    },
    "preflight": {
        "2000": {"n": 2000, "unit": "nodes",
                 "ours": {"median_s": 3.62, "reads": 18, "writes": 0, "changed": 0, "rerun_writes": 0},
                 "naive": {"median_s": 40.0, "reads": 4, "writes": 0}},
    },
}}


def test_markdown_table_rows_in_job_order_and_by_size():
    md = report.render_markdown(RESULTS)
    lines = md.strip().splitlines()
    assert lines[0].startswith("| job | N | ours median s | naive median s | ratio")
    assert lines[2].startswith("| preflight | 2000 nodes | 3.62 | 40.0 | 11.0x | 18 / 0 | 4 / 0 | 0 | 0 |")
    assert lines[3].startswith("| owner_references | 100 dependents | 3.10 | 135 | 43.5x | 200 / 202 | 402 / 200 |")
    assert len(lines) == 5


def test_a_prediction_is_marked_and_never_in_the_measured_columns():
    md = report.render_markdown(RESULTS)
    row = [line for line in md.splitlines() if line.startswith("| owner_references | 1000 ")][0]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3] == "not measured (predicted ~1350 s)"
    assert cells[4] == "-"  # no ratio from a prediction
    assert cells[6] == "-"  # no request counts for a run that did not happen
    assert cells[5] == "2138 / 2006" and cells[8] == "0"


def test_plot_series_keeps_predictions_apart():
    series = report.plot_series(RESULTS)
    assert series["owner_references"]["ours"] == [(100, 3.1), (1000, 12.7)]
    assert series["owner_references"]["naive"] == [(100, 135.0)]
    assert series["owner_references"]["predicted"] == [(1000, 1350.0)]
    assert series["owner_references"]["limit"] == [] and series["owner_references"]["kubectl"] == []


def test_plot_series_has_the_limit_and_kubectl_where_measured():
    results = {"jobs": {"owner_references": {"1000": {"n": 1000, "ours": {"median_s": 13.8},
                                                      "limit": {"median_s": 3.98}, "kubectl": {"median_s": 10.7}}}}}
    series = report.plot_series(results)["owner_references"]
    assert series["limit"] == [(1000, 3.98)] and series["kubectl"] == [(1000, 10.7)]


def test_seconds_formatting():
    assert report.fmt_s(None) == "-"
    assert report.fmt_s(1.234) == "1.23"
    assert report.fmt_s(12.34) == "12.3"
    assert report.fmt_s(1234.5) == "1234"


def test_fewer_than_three_runs_are_said_in_the_cell():
    assert report.measured_cell({"runs_s": [1200.0], "median_s": 1200.0}) == "1200 (1 run)"
    assert report.measured_cell({"runs_s": [1.0, 3.0], "median_s": 2.0}) == "2.00 (2 runs)"
    assert report.measured_cell({"runs_s": [1.0, 2.0, 3.0], "median_s": 2.0}) == "2.00"
    assert report.measured_cell({}) == "-"
    assert report.naive_cell({"runs_s": [50.0], "median_s": 50.0}) == "50.0 (1 run)"


def test_accounting_table_says_where_writes_go_and_when_each_side_was_measured():
    results = {"jobs": {"upgrade": {"3": {
        "n": 3, "unit": "nodes", "ours": {"writes": 34, "changed": 28, "handover_writes": 2, "record_writes": 4,
                                          "measured_at": "2026-11-22T10:42:30+00:00", "loadavg_end": [1.5, 1, 1]},
        "naive": {"median_s": 20.0, "runs_s": [20.0], "measured_at": "2026-11-22T11:00:00+00:00",
                  "loadavg_end": [0.7, 1, 1]}}},
        "owner_references": {"5000": {"n": 5000, "ours": {"writes": 10072, "changed": 10000, "record_writes": 72},
                                      "naive": {"predicted_s": 5800.0}}}}}
    table = report.render_accounting(results).splitlines()
    assert table[2] == "| owner_references | 5000 | 10072 | 10000 | 0 | 72 | - | not measured |"
    assert table[3] == ("| upgrade | 3 | 34 | 28 | 2 | 4 | 2026-11-22T10:42:30Z (load 1.5) | "
                        "2026-11-22T11:00:00Z (load 0.7) |")


def test_limit_table_gives_throughput_share_and_kubectl_ratio():
    results = {"jobs": {"owner_references": {"5000": {
        "n": 5000, "unit": "dependents",
        "ours": {"median_s": 20.0, "runs_s": [19.0, 20.0, 21.0], "reads": 220, "writes": 10047},
        "limit": {"median_s": 8.0, "runs_s": [8.0, 8.0, 9.0], "reads": 6, "writes": 10000, "concurrency": 16},
        "kubectl": {"median_s": 25.0, "runs_s": [25.0, 24.0, 26.0], "reads": 12, "writes": 10000}}},
        "preflight": {"10": {"n": 10, "ours": {"median_s": 1.0, "runs_s": [1.0], "reads": 13, "writes": 0}}}}}
    table = report.render_limits(results)
    row = [line for line in table.splitlines() if line.startswith("| owner_references")]
    assert len(row) == 1 and "preflight" not in table  # rows without limit or kubectl are left out
    cells = [c.strip() for c in row[0].split("|")[1:-1]]
    assert cells[2] == "20.0" and cells[3] == "8.00 at c=16" and cells[4] == "25.0"
    assert cells[5] == "502 / 1250 / 400"  # writes per second
    assert cells[6] == "0.40"  # ours' throughput / the limit's
    assert cells[7] == "1.2x"  # kubectl bulk's time / ours'
    assert cells[8] == "220 / 10047 ; 6 / 10000 ; 12 / 10000"


def test_limit_table_share_of_a_read_only_job_is_the_time_ratio():
    results = {"jobs": {"preflight": {"5000": {
        "n": 5000, "unit": "nodes",
        "ours": {"median_s": 8.5, "runs_s": [8.5], "reads": 16, "writes": 0},
        "limit": {"median_s": 4.0, "runs_s": [4.0], "reads": 16, "writes": 0, "concurrency": 4},
        "kubectl": {"median_s": 8.0, "runs_s": [8.0], "reads": 15, "writes": 0}}}}}
    cells = [c.strip() for c in report.render_limits(results).splitlines()[2].split("|")[1:-1]]
    assert cells[5] == "- / - / -"  # no writes, no write rate
    assert cells[6] == "0.47"  # the limit's time / ours' (4 / 8.5), not rounded to 0.5
    assert cells[7] == "0.9x"


def test_limit_table_is_empty_without_such_rows():
    assert report.render_limits({"jobs": {"preflight": {"10": {"n": 10, "ours": {"median_s": 1.0}}}}}) == ""


def test_floor_table_splits_ours_into_ansible_and_the_rest():
    costs = {"startup_s": 2.5, "module_task_s": 0.55, "control_task_s": 0.05}
    results = {"jobs": {"install_ebpf": {"3": {
        "n": 3, "unit": "nodes (whole install)",
        "ours": {"median_s": 33.5, "runs_s": [33.5, 34.0, 32.0], "ansible_floor_s": 20.5, "ansible_costs": costs,
                 "runs": [{"profile": {"playbooks": 1, "floor_tasks": {"module": 28, "control": 70}}}]},
        "kubectl": {"median_s": 5.34, "runs_s": [5.3, 5.34, 5.4]},
        "limit": {"median_s": 0.8, "runs_s": [0.8, 0.9, 0.7]}}},
        "upgrade": {"3": {"n": 3, "unit": "nodes (whole upgrade)",
                          "ours": {"median_s": 10.0, "runs_s": [10.0], "ansible_floor_s": 6.0, "ansible_costs": costs,
                                   "runs": [{"profile": {"playbooks": 1, "floor_tasks": {"module": 9, "control": 4}}}]}}},
        "preflight": {"10": {"n": 10, "ours": {"median_s": 1.0, "runs_s": [1.0]}}}}}
    table = report.render_floor(results)
    rows = [line for line in table.splitlines() if line.startswith("| ")][1:]
    assert len(rows) == 2 and "preflight" not in table  # rows without a floor are left out
    cells = [c.strip() for c in rows[0].split("|")[1:-1]]
    assert cells[0] == "install_ebpf"
    assert cells[3] == "1 / 28 / 70"
    assert cells[4] == "2.50, 0.550, 0.050"
    assert cells[5] == "20.5"
    assert cells[6] == "13.0"  # 33.5 - 20.5
    assert cells[7] == "0.80"  # the limit: the job's requests
    assert cells[8] == "12.2"  # 33.5 - 20.5 - 0.8
    assert cells[9] == "5.34"
    assert cells[10] == "28.2 (73%)"  # 33.5 - 5.34, of which the floor 20.5
    other = [c.strip() for c in rows[1].split("|")[1:-1]]
    assert other[0] == "upgrade" and other[7:] == ["-", "-", "-", "-"]  # neither limit nor kubectl measured


def test_floor_table_is_empty_without_a_floor():
    assert report.render_floor({"jobs": {"upgrade": {"3": {"n": 3, "ours": {"median_s": 1.0}}}}}) == ""
