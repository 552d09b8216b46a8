"""The host_endpoint_migration module: its documented options match its argument spec."""

from ansible_collections.calico_ops.lifecycle.plugins.modules import host_endpoint_migration as module
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.module_docs import (
    RECORDED_JOB_FRAGMENTS, assert_documented_options_match)


def test_documented_options_match_the_argument_spec():
    doc = assert_documented_options_match(module, RECORDED_JOB_FRAGMENTS)
    assert doc["author"] == ["calico_ops maintainers (@calico-ops)"]
    assert all(a.get("description") for a in doc["attributes"].values())
