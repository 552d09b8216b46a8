"""k8s/report.py: a bulk job's result lists the first ``report_limit`` objects and says how many it left out;
the owner references and host endpoint jobs count and record every one whatever the limit."""

from __future__ import absolute_import, division, print_function

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.report import (
    DEFAULT_REPORT_LIMIT, listed, report_limit_problem)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.owner_references.rules import OwnerReferencesError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.owner_references.runner import run as or_run
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.rules import (
    HostEndpointMigrationError)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.runner import run as hep_run
from ansible_collections.calico_ops.lifecycle.tests.unit.plugins.module_utils.test_k8s_parallel import NoClient
from ansible_collections.calico_ops.lifecycle.tests.unit.plugins.module_utils.test_owner_references_runner import (
    World as OwnerWorld)
from ansible_collections.calico_ops.lifecycle.tests.unit.plugins.module_utils.test_host_endpoint_migration_runner \
    import World as HostEndpointWorld


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


def test_owner_references_refuses_a_negative_limit_before_any_request():
    with pytest.raises(OwnerReferencesError, match="report_limit is -1: .*0 or more.*nothing was read or written"):
        or_run(NoClient(), {"state": "detached", "report_limit": -1})


def test_host_endpoint_migration_refuses_a_negative_limit_before_any_request():
    with pytest.raises(HostEndpointMigrationError,
                       match="report_limit is -1: .*0 or more.*nothing was read or written"):
        hep_run(NoClient(), {"state": "migrated", "report_limit": -1}, datastore=object())


def test_owner_references_lists_the_first_objects_and_records_every_one(tmp_path):
    """The same run with a limit of 2 and without one: the same counts and record, the first two objects listed."""
    full = OwnerWorld().runner(tmp_path / "full", report_limit=1000).detach()
    w = OwnerWorld()
    cut = w.runner(tmp_path / "cut", report_limit=2).detach()
    assert cut["counts"] == full["counts"] and cut["counts"]["affected"] == 6
    assert [o["name"] for o in cut["objects"]] == [o["name"] for o in full["objects"]][:2]
    assert cut["not_listed"] == {"objects": 4} and full["not_listed"] == {"objects": 0}
    assert cut["record"]["entries"] == full["record"]["entries"] == 7
    w.recreate_owners()
    attached = w.runner(tmp_path / "cut", report_limit=0).attach()
    assert attached["objects"] == [] and attached["not_listed"] == {"objects": 6}
    assert attached["counts"]["attached"] == 7 and attached["record"]["pending"] == 0


def test_owner_references_lists_100_by_default(tmp_path):
    res = OwnerWorld().runner(tmp_path).detach()
    assert len(res["objects"]) == 6 and res["not_listed"] == {"objects": 0}
    assert OwnerWorld().runner(tmp_path / "d").report_limit == DEFAULT_REPORT_LIMIT == 100


def test_host_endpoint_migration_lists_the_first_endpoints_nodes_and_labels(tmp_path):
    w = HostEndpointWorld(tmp_path)
    res = w.runner(report_limit=1).run("migrated")
    assert res["counts"]["deleted"] == 3 and res["counts"]["nodes_labelled"] == 3
    assert len(res["endpoints"]) == 1 and len(res["nodes"]) == 1 and list(res["labels"]) == ["n1"]
    assert res["not_listed"] == {"endpoints": 2, "labels": 2, "nodes": 2}
    assert not any(n in w.heps() for n in w.old)
    assert len(w.record()) == 3  # every endpoint deleted is recorded, listed or not
    restored = w.runner(report_limit=0).run("restored")
    assert restored["endpoints"] == [] and restored["not_listed"] == {"endpoints": 3}
    assert restored["counts"]["restored"] == 3 and all(n in w.heps() for n in w.old)
