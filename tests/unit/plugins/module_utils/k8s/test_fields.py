"""k8s/fields.py: a status condition by type, a status count that may be missing."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.fields import condition, count


def test_condition_is_the_first_of_its_type():
    obj = {"status": {"conditions": [{"type": "Progressing", "status": "True"},
                                     {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"},
                                     {"type": "Available", "status": "True"}]}}
    assert condition(obj, "Available") == {"type": "Available", "status": "False",
                                           "reason": "MinimumReplicasUnavailable"}
    assert condition(obj, "Progressing")["status"] == "True"


@pytest.mark.parametrize("obj", [None, {}, {"status": None}, {"status": {}}, {"status": {"conditions": None}},
                                 {"status": {"conditions": [{"type": "Degraded", "status": "True"}]}}])
def test_condition_missing_is_empty(obj):
    assert condition(obj, "Available") == {}


@pytest.mark.parametrize("value, expected", [(3, 3), ("7", 7), (None, 0), ("", 0), (0, 0), ("many", 0), ([], 0),
                                             ({"n": 1}, 0)])
def test_count(value, expected):
    assert count(value) == expected
