"""The owner_references module: its documented options match its argument spec."""

from ansible_collections.calico_ops.lifecycle.plugins.modules import owner_references as module
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.module_docs import (
    RECORDED_JOB_FRAGMENTS, assert_documented_options_match)


def test_documented_options_match_the_argument_spec():
    assert_documented_options_match(module, RECORDED_JOB_FRAGMENTS)
