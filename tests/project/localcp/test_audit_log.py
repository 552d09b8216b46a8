"""localcp's audit log reader: a mark is an offset in one file, so the file must never be rotated under it, and a
reader that finds it rotated fails instead of reporting no requests."""

import json

import pytest

from localcp import cluster
from localcp.audit import AuditLog


def _event(verb, user="admin", name="x"):
    return json.dumps({"stage": "ResponseComplete", "verb": verb, "user": {"username": user},
                       "objectRef": {"resource": "configmaps", "name": name}}) + "\n"


def test_events_since_a_mark_are_the_later_ones(tmp_path):
    path = tmp_path / "audit.log"
    path.write_text(_event("get", name="before"))
    log = AuditLog(path)
    mark = log.mark()
    with open(path, "a") as f:
        f.write(_event("patch", name="after") + _event("get", user="kwok"))
    assert [e["objectRef"]["name"] for e in log.events_since(mark)] == ["after"]
    assert [e["verb"] for e in log.writes_since(mark)] == ["patch"]


def test_a_log_rotated_since_the_mark_is_an_error_not_zero_requests(tmp_path):
    """What kube-apiserver's log writer does at its size limit: the file renamed, a new one started. The events
    after the mark are in the old file; reading the new one from the mark's offset would find none, and a check
    that a run wrote nothing would pass without looking."""
    path = tmp_path / "audit.log"
    path.write_text("".join(_event("get", name="n%d" % i) for i in range(50)))
    log = AuditLog(path)
    mark = log.mark()
    path.rename(tmp_path / "audit-2026-11-27T08-05-07.000.log")
    path.write_text(_event("patch", name="after-rotation"))
    with pytest.raises(RuntimeError, match="rotated or truncated"):
        log.writes_since(mark)


def test_the_api_server_is_told_never_to_rotate_its_audit_log():
    """--audit-log-maxsize=0 is not 'no limit': kube-apiserver's lumberjack writer then rotates at 100 MB, which a
    5,000-object benchmark run passes. The control plane passes a size no run reaches."""
    assert cluster.AUDIT_LOG_MAX_MB >= 1024 * 1024
    source = open(cluster.__file__).read()
    assert '"--audit-log-maxsize=0"' not in source
    assert 'f"--audit-log-maxsize={AUDIT_LOG_MAX_MB}"' in source
