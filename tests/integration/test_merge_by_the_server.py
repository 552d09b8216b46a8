"""merge_patch merges by the API server: a patch of one port of a two-port Service keeps the other.

The module sends the patch as a server-side dry run, compares the server's answer with the live object and writes
only when they differ. Before, it merged by hand (RFC 7386, lists replaced whole): a patch naming only the metrics
port dropped the https port. The audit log proves the writes: one PATCH, then none on a re-run, none in check mode.
"""

import json

import pytest
import yaml

pytestmark = pytest.mark.integration

PORTS = [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 8443},
         {"name": "metrics", "port": 9094, "protocol": "TCP", "targetPort": 9094}]


def play(namespace, patch, **extra):
    task = dict({"api_version": "v1", "resource": "services", "namespace": namespace, "name": "two-ports",
                 "patch": patch}, **extra)
    return yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "patch", "calico_ops.lifecycle.merge_patch": task, "register": "out"}]}])


def ports(cluster, namespace):
    svc = json.loads(cluster.kubectl("get", "service", "two-ports", "-n", namespace, "-o", "json").stdout)
    return sorted((p["name"], p["port"], p["targetPort"]) for p in svc["spec"]["ports"])


def writes(cluster, mark, namespace):
    return [ev for ev in cluster.audit.writes_since(mark) if (ev.get("objectRef") or {}).get("namespace") == namespace]


def test_a_patch_of_the_metrics_port_keeps_the_https_port(cluster, namespace, ansible):
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "two-ports", "namespace": namespace},
        "spec": {"selector": {"app": "x"}, "ports": PORTS}}))
    patch = {"spec": {"ports": [{"port": 9094, "targetPort": 19094}]}}

    mark = cluster.audit.mark()
    res = ansible.playbook(play(namespace, patch), check=True, diff=True)
    assert res.rc == 0, res.stdout[-3000:]
    out = res.result_of("patch")
    assert out["changed"] is True
    assert writes(cluster, mark, namespace) == []             # check mode: the dry run only
    assert ports(cluster, namespace) == [("https", 443, 8443), ("metrics", 9094, 9094)]
    # the diff is the live object against the server's answer: both ports, only the metrics one changed
    assert sorted((p.get("name"), p["targetPort"]) for p in out["diff"]["after"]["spec"]["ports"]) == [
        ("https", 8443), ("metrics", 19094)]
    assert sorted((p.get("name"), p["targetPort"]) for p in out["diff"]["before"]["spec"]["ports"]) == [
        ("https", 8443), ("metrics", 9094)]

    mark = cluster.audit.mark()
    res = ansible.playbook(play(namespace, patch))
    assert res.rc == 0, res.stdout[-3000:]
    assert res.result_of("patch")["changed"] is True
    assert res.result_of("patch")["patch_type"] == "strategic"
    assert ports(cluster, namespace) == [("https", 443, 8443), ("metrics", 9094, 19094)]
    done = writes(cluster, mark, namespace)
    assert [(ev["verb"], ev["objectRef"]["resource"], ev["objectRef"]["name"]) for ev in done] == [
        ("patch", "services", "two-ports")]

    mark = cluster.audit.mark()
    res = ansible.playbook(play(namespace, patch))
    assert res.rc == 0, res.stdout[-3000:]
    assert res.result_of("patch")["changed"] is False
    assert writes(cluster, mark, namespace) == []             # a re-run writes nothing
    assert ports(cluster, namespace) == [("https", 443, 8443), ("metrics", 9094, 19094)]


def test_a_stale_lock_and_an_invalid_patch_fail_in_the_dry_run_naming_the_service(cluster, namespace, ansible):
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "two-ports", "namespace": namespace},
        "spec": {"selector": {"app": "x"}, "ports": PORTS}}))
    mark = cluster.audit.mark()
    res = ansible.playbook(play(namespace, {"spec": {"ports": [{"port": 9094, "targetPort": 70000}]}}))
    assert res.rc != 0
    msg = res.result_of("patch")["msg"]
    assert msg.startswith("merge patch: services %s/two-ports: 422 " % namespace), msg
    assert "\n" not in msg and "Traceback" not in res.stdout
    assert writes(cluster, mark, namespace) == []             # refused in the dry run: nothing written
    assert ports(cluster, namespace) == [("https", 443, 8443), ("metrics", 9094, 9094)]
