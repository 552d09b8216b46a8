"""k8s/report.py: a bulk job's result lists the first ``report_limit`` objects and says how many it left out (the
jobs that use it: owner_references/test_runner.py, host_endpoints/test_runner.py)."""

from __future__ import absolute_import, division, print_function

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.report import DEFAULT_REPORT_LIMIT, listed, report_limit_problem


def test_lists_the_first_items_and_counts_the_rest():
    out = listed({"counts": {"x": 5}}, 2, objects=[1, 2, 3, 4, 5], empty=[])
    assert out == {"counts": {"x": 5}, "objects": [1, 2], "empty": [], "not_listed": {"objects": 3, "empty": 0}}


def test_a_dict_keeps_its_first_keys_by_name():
    out = listed({}, 2, labels={"n3": {"a": "3"}, "n1": {"a": "1"}, "n2": {"a": "2"}})
    assert out["labels"] == {"n1": {"a": "1"}, "n2": {"a": "2"}} and out["not_listed"] == {"labels": 1}


def test_zero_lists_none_and_a_limit_above_the_size_lists_all():
    assert listed({}, 0, objects=[1, 2]) == {"objects": [], "not_listed": {"objects": 2}}
    assert listed({}, 10, objects=[1, 2]) == {"objects": [1, 2], "not_listed": {"objects": 0}}


@pytest.mark.parametrize("value", [-1, True, "4", 1.5])
def test_a_limit_below_zero_or_not_a_whole_number_is_named(value):
    msg = report_limit_problem(value)
    assert msg.startswith("report_limit is %r: " % (value,)) and "0 or more (default 100)" in msg


@pytest.mark.parametrize("value", [None, 0, 1, DEFAULT_REPORT_LIMIT, 100000])
def test_a_usable_limit_passes(value):
    assert report_limit_problem(value) is None
