"""calico/version.py: versions and the upgrade guards (pure rules)."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico import version as cv


@pytest.mark.parametrize("text", ["v3.31.4", "v0.0.0", "v10.2.33"])
def test_strict_versions_parse(text):
    assert cv.fmt(cv.parse_version(text)) == text


@pytest.mark.parametrize("text", ["3.31", "v3.31", "v3.31.4.1", "3.31.4", "v3.31.4-rc1", "", None, "v03.1.1"])
def test_strict_refuses_and_names_the_variable(text):
    with pytest.raises(cv.VersionError) as err:
        cv.parse_version(text, "upgrade_target_version")
    assert "upgrade_target_version" in str(err.value)


@pytest.mark.parametrize("text, expected", [
    ("v3.27.5", (3, 27, 5)), ("3.27.5", (3, 27, 5)), ("v3.27.5-amd64", (3, 27, 5)),
    ("v3.28.0-0.dev-12-gabcdef", (3, 28, 0)), ("master", None), ("v3.27", None), ("", None), (None, None)])
def test_detected_versions_parse_leniently(text, expected):
    assert cv.parse_detected(text) == expected


@pytest.mark.parametrize("image, tag", [
    ("docker.io/calico/node:v3.27.5", "v3.27.5"), ("localhost:5000/calico/node:v3.31.4", "v3.31.4"),
    ("localhost:5000/calico/node", None), ("calico/node@sha256:abc", None),
    ("calico/node:v3.31.4@sha256:abc", "v3.31.4"), ("", None)])
def test_image_tag(image, tag):
    assert cv.image_tag(image) == tag


def test_compare_orders_numerically():
    assert cv.compare("v3.9.0", "v3.10.0") == -1
    assert cv.compare("v3.31.4", "v3.31.4") == 0
    assert cv.compare("v3.32.0", "v3.31.4") == 1
    assert cv.same_minor("v3.31.0", "v3.31.4") and not cv.same_minor("v3.30.9", "v3.31.4")


def test_version_and_url_problems_name_the_variables():
    problems = cv.version_problems({"upgrade_target_version": "3.31", "upgrade_current_version": "",
                                    "other": "v3.31.4.1"})
    assert len(problems) == 2
    assert any("upgrade_target_version" in p and "'3.31'" in p for p in problems)
    assert any(p.startswith("other") for p in problems)
    urls = cv.url_problems({"upgrade_manifest_url": "ftp://x", "upgrade_chart_repo_url": "https://ok.example/c",
                            "upgrade_etcd_endpoints": ["http://127.0.0.1:2379", "127.0.0.1:2379"]})
    assert urls == ["upgrade_etcd_endpoints[1] must be an http:// or https:// URL, not '127.0.0.1:2379'",
                    "upgrade_manifest_url must be an http:// or https:// URL, not 'ftp://x'"]


def test_plan_refuses_older_than_v3_15():
    plan = cv.plan("v3.14.2", "v3.31.4", current_source="image x")
    assert plan["action"] == "refuse"
    assert "v3.14.2" in plan["reason"] and "v3.15.0" in plan["reason"] and "image x" in plan["reason"]


def test_plan_accepts_exactly_v3_15_0():
    assert cv.plan("v3.15.0", "v3.31.4")["action"] == "upgrade"


def test_plan_refuses_downgrades():
    plan = cv.plan("v3.32.0", "v3.31.4")
    assert plan["action"] == "refuse" and "downgrade" in plan["reason"]


def test_plan_noop_at_target():
    plan = cv.plan("v3.31.4", "v3.31.4")
    assert plan["action"] == "noop" and not plan["owner_references"]


def test_plan_owner_references_only_before_v3_28():
    assert cv.plan("v3.27.5", "v3.31.4")["owner_references"] is True
    assert cv.plan("v3.28.0", "v3.31.4")["owner_references"] is False
    assert cv.plan("v3.29.7", "v3.31.4")["owner_references"] is False


def test_plan_refuses_unknown_version_and_enterprise():
    assert cv.plan(None, "v3.31.4")["action"] == "refuse"
    assert "upgrade_current_version" in cv.plan(None, "v3.31.4")["reason"]
    assert cv.plan("garbage", "v3.31.4")["action"] == "refuse"
    plan = cv.plan("v3.27.5", "v3.31.4", variant="TigeraSecureEnterprise")
    assert plan["action"] == "refuse" and "TigeraSecureEnterprise" in plan["reason"]


def test_plan_resumes_an_unfinished_upgrade_at_the_target():
    record = {"source_version": "v3.27.5", "target_version": "v3.31.4", "phase": "upgrading"}
    plan = cv.plan("v3.31.4", "v3.31.4", record=record)
    assert plan["action"] == "upgrade" and plan["resume"]
    assert plan["source_version"] == "v3.27.5" and plan["owner_references"]


def test_plan_done_record_is_a_noop_and_other_targets_are_ignored():
    done = {"source_version": "v3.27.5", "target_version": "v3.31.4", "phase": "done"}
    assert cv.plan("v3.31.4", "v3.31.4", record=done)["action"] == "noop"
    other = {"source_version": "v3.27.5", "target_version": "v3.30.0", "phase": "upgrading"}
    plan = cv.plan("v3.29.7", "v3.31.4", record=other)
    assert plan["action"] == "upgrade" and not plan["resume"] and plan["source_version"] == "v3.29.7"


def test_plan_resume_still_refuses_a_newer_cluster():
    record = {"source_version": "v3.27.5", "target_version": "v3.31.4", "phase": "upgrading"}
    assert cv.plan("v3.32.1", "v3.31.4", record=record)["action"] == "refuse"


def test_plan_rejects_a_malformed_target():
    with pytest.raises(cv.VersionError):
        cv.plan("v3.27.5", "v3.31")


def test_target_range_refuses_older_than_v3_15_and_newer_than_tested_without_the_opt_in():
    from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.version import target_problems
    assert target_problems("v3.31.4") == [] and target_problems("v3.15.0") == []
    older = target_problems("v3.14.9", allow_untested=True)
    assert len(older) == 1 and "upgrade_target_version v3.14.9 is older than v3.15.0" in older[0]
    newer = target_problems("v3.32.0")
    assert len(newer) == 1 and "newer than v3.31.4" in newer[0] and "upgrade_allow_untested_target: true" in newer[0]
    assert target_problems("v3.32.0", allow_untested=True) == []
    assert target_problems("3.31") == []  # left to version_problems
