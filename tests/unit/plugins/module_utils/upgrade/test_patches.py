"""upgrade/patches.py: strategic-merge-like and JSON patches."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.upgrade import patches as upgrade_patches


def test_strategic_merge_merges_containers_and_env_by_name():
    base = {"spec": {"containers": [{"name": "a", "image": "x", "env": [{"name": "E1", "value": "1"}]},
                                    {"name": "b", "image": "y"}],
                     "tolerations": [{"operator": "Exists"}]}}
    patch = {"spec": {"containers": [{"name": "a", "env": [{"name": "E2", "value": "2"}, {"name": "E1", "value": "9"}]},
                                     {"name": "b", "$patch": "delete"}, {"name": "c", "image": "z"}],
                      "tolerations": [{"key": "only"}]}}
    out = upgrade_patches.strategic_merge(base, patch)
    assert [c["name"] for c in out["spec"]["containers"]] == ["a", "c"]
    assert out["spec"]["containers"][0]["env"] == [{"name": "E1", "value": "9"}, {"name": "E2", "value": "2"}]
    assert out["spec"]["containers"][0]["image"] == "x"
    assert out["spec"]["tolerations"] == [{"key": "only"}]
    assert base["spec"]["containers"][1]["name"] == "b"  # the input is not changed


def test_strategic_merge_null_deletes_and_replace_directive():
    out = upgrade_patches.strategic_merge({"a": {"b": 1, "c": 2}, "d": 3}, {"a": {"$patch": "replace", "x": 1}, "d": None})
    assert out == {"a": {"x": 1}}
    mounts = upgrade_patches.strategic_merge({"volumeMounts": [{"name": "v", "mountPath": "/a"}]},
                                             {"volumeMounts": [{"name": "v", "mountPath": "/b"}]})
    assert len(mounts["volumeMounts"]) == 2  # volumeMounts merge on mountPath, as in Kubernetes


def test_strategic_merge_keys_ports_as_the_api_server_does():
    """A Service's ports merge by ``port`` (ServicePort's merge key): a patch of the metrics port's targetPort keeps
    the https port (keyed by containerPort it matched nothing and replaced both); a container's by
    ``containerPort``; a NetworkPolicy rule's are replaced whole (no merge key)."""
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "m"},
           "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443},
                              {"name": "metrics", "port": 9094, "targetPort": 9094}]}}
    out = upgrade_patches.strategic_merge(svc, {"spec": {"ports": [{"port": 9094, "targetPort": 19094}]}})
    assert out["spec"]["ports"] == [{"name": "https", "port": 443, "targetPort": 8443},
                                    {"name": "metrics", "port": 9094, "targetPort": 19094}]
    ds = {"kind": "DaemonSet", "spec": {"template": {"spec": {"containers": [
        {"name": "c", "ports": [{"containerPort": 9091, "name": "felix"}, {"containerPort": 9099}]}]}}}}
    out = upgrade_patches.strategic_merge(ds, {"spec": {"template": {"spec": {"containers": [
        {"name": "c", "ports": [{"containerPort": 9091, "hostPort": 9091}]}]}}}})
    assert out["spec"]["template"]["spec"]["containers"][0]["ports"] == [
        {"containerPort": 9091, "name": "felix", "hostPort": 9091}, {"containerPort": 9099}]
    np = {"kind": "NetworkPolicy", "spec": {"ingress": [{"ports": [{"port": 80}, {"port": 443}]}]}}
    out = upgrade_patches.strategic_merge(np["spec"]["ingress"][0], {"ports": [{"port": 443}]}, "ingress",
                                          ("spec", "ingress", "*"), "NetworkPolicy")
    assert out["ports"] == [{"port": 443}]


def test_json_patch_operations():
    doc = {"a": {"b": [1, 2]}, "c": "x"}
    out = upgrade_patches.json_patch(doc, [{"op": "add", "path": "/a/b/-", "value": 3}, {"op": "replace", "path": "/c", "value": "y"},
                                           {"op": "add", "path": "/a/b/0", "value": 0}, {"op": "remove", "path": "/a/b/1"},
                                           {"op": "copy", "from": "/c", "path": "/d"}, {"op": "move", "from": "/d", "path": "/e~1f"},
                                           {"op": "test", "path": "/e~1f", "value": "y"}])
    assert out == {"a": {"b": [0, 2, 3]}, "c": "y", "e/f": "y"}
    for ops in ([{"op": "replace", "path": "/nope", "value": 1}], [{"op": "remove", "path": "/a/b/5"}],
                [{"op": "test", "path": "/c", "value": "z"}], [{"op": "frobnicate", "path": "/c"}],
                [{"op": "add", "path": "c", "value": 1}]):
        with pytest.raises(upgrade_patches.PatchError):
            upgrade_patches.json_patch(doc, ops)
