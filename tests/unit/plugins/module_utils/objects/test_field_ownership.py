"""objects/field_ownership.py: handing fields over to our field manager, pure and through the real Client against the
fake API."""

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.objects import field_ownership as fo
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.objects.field_ownership import Resolver

from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.fake_k8s import FakeDynamic, client as client_for
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.objects_cluster import cluster


def entry(manager, fields, operation="Apply", subresource=None, api="apps/v1"):
    out = {"manager": manager, "operation": operation, "apiVersion": api, "fieldsType": "FieldsV1",
           "fieldsV1": fields, "time": "2026-01-01T00:00:00Z"}
    if subresource:
        out["subresource"] = subresource
    return out


INIT = {"f:spec": {"f:template": {"f:spec": {"f:initContainers": {'k:{"name":"mount-bpffs"}': {".": {}}}}}}}
IMAGE = {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"calico-node"}': {"f:image": {}}}}}}}
STATUS = {"f:status": {"f:numberReady": {}}}


def daemonset():
    meta = {"name": "calico-node", "namespace": "kube-system", "managedFields": [entry("test-setup", INIT)]}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta}


def test_merge_fields_is_a_union():
    merged = fo.merge_fields(INIT, IMAGE)
    spec = merged["f:spec"]["f:template"]["f:spec"]
    assert set(spec) == {"f:initContainers", "f:containers"}


def test_handover_merges_installer_into_our_apply_entry_and_keeps_status():
    fields = [entry("kubectl-client-side-apply", INIT, "Update"), entry("calico-ops", IMAGE),
              entry("kube-controller-manager", STATUS, "Update", "status"), entry("kubectl-edit", IMAGE, "Update")]
    new, adopted = fo.handover(fields, ["kubectl-client-side-apply"], "calico-ops", "apps/v1", now="T")
    assert adopted == ["kubectl-client-side-apply"]
    assert [e["manager"] for e in new] == ["calico-ops", "kube-controller-manager", "kubectl-edit"]
    ours = new[0]
    assert ours["operation"] == "Apply" and ours["time"] == "T"
    assert set(ours["fieldsV1"]["f:spec"]["f:template"]["f:spec"]) == {"f:initContainers", "f:containers"}


def test_handover_creates_our_entry_and_is_idempotent():
    fields = [entry("test-setup", INIT)]
    new, adopted = fo.handover(fields, ["test-setup"], "calico-ops", "apps/v1")
    assert adopted == ["test-setup"] and [e["manager"] for e in new] == ["calico-ops"]
    again, adopted_again = fo.handover(new, ["test-setup"], "calico-ops", "apps/v1")
    assert adopted_again == [] and again == new


def test_handover_ignores_our_own_name_and_status_entries_of_the_installer():
    fields = [entry("test-setup", STATUS, "Update", "status")]
    assert fo.handover(fields, ["test-setup", "calico-ops"], "calico-ops", "apps/v1") == (fields, [])


def test_run_patches_with_a_resource_version_guard_and_skips_absent_objects():
    fake = FakeDynamic()
    fake.add_type("apps/v1", "daemonsets", "DaemonSet")
    stored = fake.put("apps/v1", "daemonsets", daemonset())
    writes = []
    fake.before_write = lambda method, path, body: writes.append((method, path, body))
    client = client_for(fake)
    objects = [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                "metadata": {"name": "calico-node", "namespace": "kube-system"}},
               {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "gone", "namespace": "kube-system"}},
               {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "x"}}]
    result = fo.run(client, objects, ["test-setup"], "calico-ops")
    assert result["changed"] and result["counts"] == {"objects": 3, "adopted": 1, "absent": 1, "unchanged": 0,
                                                      "unknown_type": 1, "covered": 0}
    assert len(writes) == 1
    method, path, ops = writes[0]
    assert method == "PATCH" and path.endswith("/namespaces/kube-system/daemonsets/calico-node")
    assert ops[0] == {"op": "test", "path": "/metadata/resourceVersion",
                      "value": stored["metadata"]["resourceVersion"]}
    live = fake.objects["apps/daemonsets"][("kube-system", "calico-node")]
    assert [e["manager"] for e in live["metadata"]["managedFields"]] == ["calico-ops"]
    again = fo.run(client, objects[:1], ["test-setup"], "calico-ops")
    assert not again["changed"] and again["objects"][0]["action"] == "nothing to adopt" and len(writes) == 1


def test_run_reads_again_when_the_object_changed_meanwhile():
    fake = FakeDynamic()
    fake.add_type("apps/v1", "daemonsets", "DaemonSet")
    fake.put("apps/v1", "daemonsets", daemonset())
    bumped = []

    def concurrent_writer(method, path, body):
        if not bumped:  # another writer updates the object between our read and our patch
            bumped.append(True)
            live = fake.objects["apps/daemonsets"][("kube-system", "calico-node")]
            fake.put("apps/v1", "daemonsets", live)
    fake.before_write = concurrent_writer
    result = fo.run(client_for(fake), [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                                        "metadata": {"name": "calico-node", "namespace": "kube-system"}}],
                    ["test-setup"], "calico-ops")
    assert result["counts"]["adopted"] == 1
    live = fake.objects["apps/daemonsets"][("kube-system", "calico-node")]
    assert [e["manager"] for e in live["metadata"]["managedFields"]] == ["calico-ops"]


def test_run_in_check_mode_writes_nothing():
    fake = FakeDynamic()
    fake.add_type("apps/v1", "daemonsets", "DaemonSet")
    fake.put("apps/v1", "daemonsets", daemonset())
    client = client_for(fake, check_mode=True)
    result = fo.run(client, [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                              "metadata": {"name": "calico-node", "namespace": "kube-system"}}],
                    ["test-setup"], "calico-ops", diff=True)
    assert result["changed"] and result["objects"][0]["action"] == "would adopt"
    assert not [e for e in fake.log if e[0] != "GET"]
    assert result["diff"][0]["after"]["managers"] == ["calico-ops (Apply)"]


def test_several_objects_of_a_type_are_read_with_one_list():
    fake = FakeDynamic()
    fake.add_type("apiextensions.k8s.io/v1", "customresourcedefinitions", "CustomResourceDefinition",
                  namespaced=False)
    crds = []
    for i in range(5):
        name = "things%d.example.com" % i
        fake.put("apiextensions.k8s.io/v1", "customresourcedefinitions",
                 {"metadata": {"name": name, "managedFields": [entry("kubectl-create", INIT, "Update")]}})
        crds.append({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                     "metadata": {"name": name}})
    crds.append({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                 "metadata": {"name": "missing.example.com"}})
    result = fo.run(client_for(fake), crds, ["kubectl-create"], "calico-ops")
    assert result["counts"]["adopted"] == 5 and result["counts"]["absent"] == 1
    gets = [entry_ for entry_ in fake.log if entry_[0] == "GET" and "customresourcedefinitions" in entry_[1]]
    assert len(gets) == 1 and gets[0][1].endswith("/customresourcedefinitions"), gets


def test_covers_and_left_behind():
    both = fo.merge_fields(INIT, IMAGE)
    assert fo.covers(both, INIT) and fo.covers(both, IMAGE) and fo.covers(INIT, {})
    assert not fo.covers(IMAGE, INIT) and not fo.covers(INIT, both)
    shared = [entry("calico-ops", both), entry("kubectl-client-side-apply", IMAGE, "Update"),
              entry("kube-controller-manager", STATUS, "Update", "status")]
    assert fo.left_behind(shared, ["kubectl-client-side-apply"], "calico-ops") == {}
    stale = [entry("calico-ops", IMAGE), entry("kubectl-client-side-apply", both, "Update")]
    assert fo.left_behind(stale, ["kubectl-client-side-apply"], "calico-ops") == both
    # an Update entry of our own name is not an apply: it removes nothing
    assert fo.left_behind([entry("calico-ops", both, "Update"), entry("test-setup", INIT)], ["test-setup"],
                          "calico-ops") == INIT


def _whole(image):
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "calico-node", "namespace": "kube-system"},
            "spec": {"template": {"spec": {"containers": [{"name": "calico-node", "image": image}]}}}}


def _fake_with(fields_after_apply):
    fake = FakeDynamic()
    fake.add_type("apps/v1", "daemonsets", "DaemonSet")
    fake.put("apps/v1", "daemonsets", daemonset())
    applied = []

    def dry_apply(live, body):
        applied.append(body)
        live["metadata"]["managedFields"] = fields_after_apply
        return live
    fake.on_dry_apply = dry_apply
    return fake, applied


def test_no_handover_write_when_the_new_document_sets_every_field_the_installer_owns():
    fake, applied = _fake_with([entry("calico-ops", fo.merge_fields(INIT, IMAGE)), entry("test-setup", INIT)])
    result = fo.run(client_for(fake), [_whole("calico/node:v3.31.4")], ["test-setup"], "calico-ops")
    assert result["counts"]["covered"] == 1 and result["counts"]["adopted"] == 0 and not result["changed"]
    assert result["objects"][0]["action"] == "covered by the apply"
    assert [e for e in fake.log if e[0] != "GET" and e[2].get("dryRun") != "All"] == []
    assert applied and applied[0]["spec"]["template"]["spec"]["containers"][0]["image"] == "calico/node:v3.31.4"
    dry = [e for e in fake.log if e[0] == "PATCH"]
    assert dry and dry[0][2]["fieldManager"] == "calico-ops" and dry[0][2]["force"] == "true"


def test_handover_when_the_new_document_drops_a_field_the_installer_owns():
    # after the apply the installer would still own the init container alone: the release dropped it
    fake, _applied = _fake_with([entry("calico-ops", IMAGE), entry("test-setup", INIT)])
    result = fo.run(client_for(fake), [_whole("calico/node:v3.31.4")], ["test-setup"], "calico-ops")
    assert result["counts"]["adopted"] == 1 and result["objects"][0]["adopted_from"] == ["test-setup"]
    live = fake.objects["apps/daemonsets"][("kube-system", "calico-node")]
    assert [e["manager"] for e in live["metadata"]["managedFields"]] == ["calico-ops"]


def test_a_failed_dry_run_means_the_handover_is_made():
    fake = FakeDynamic()
    fake.add_type("apps/v1", "daemonsets", "DaemonSet")
    fake.put("apps/v1", "daemonsets", daemonset())  # no on_dry_apply: the dry run answers 422
    result = fo.run(client_for(fake), [_whole("calico/node:v3.31.4")], ["test-setup"], "calico-ops")
    assert result["counts"]["adopted"] == 1


def test_check_mode_dry_runs_and_reports_covered_objects_without_writing():
    fake, _applied = _fake_with([entry("calico-ops", fo.merge_fields(INIT, IMAGE)), entry("test-setup", INIT)])
    result = fo.run(client_for(fake, check_mode=True), [_whole("calico/node:v3.31.4")], ["test-setup"], "calico-ops")
    assert result["objects"][0]["action"] == "covered by the apply"
    live = fake.objects["apps/daemonsets"][("kube-system", "calico-node")]
    assert [e["manager"] for e in live["metadata"]["managedFields"]] == ["test-setup"]


def test_the_handover_patch_of_a_secret_gets_no_data_back():
    """Client.json_patch asks for the patched object's metadata only: the handover of a Secret's managedFields (a
    manifest's etcd certificates) does not bring its data back to the module."""
    fake = FakeDynamic()
    fake.add_type("v1", "secrets", "Secret")
    secret = {"apiVersion": "v1", "kind": "Secret", "data": {"etcd-key": "c2VjcmV0LWtleQ=="},
              "metadata": {"name": "calico-etcd-secrets", "namespace": "kube-system",
                           "managedFields": [entry("test-setup", {"f:data": {"f:etcd-key": {}}}, api="v1")]}}
    fake.put("v1", "secrets", secret)
    plain = fake.request
    answers = []

    def request(method, path, body=None, **params):
        resp = plain(method, path, body, **params)
        answers.append((method, resp.data.decode("utf-8")))
        return resp
    fake.request = request
    objects = [{"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "calico-etcd-secrets", "namespace": "kube-system"}}]
    result = fo.run(client_for(fake), objects, ["test-setup"], "calico-ops")
    assert result["counts"]["adopted"] == 1 and [m for m, _a in answers].count("PATCH") == 1
    patch_answer = [a for m, a in answers if m == "PATCH"][0]
    assert "c2VjcmV0LWtleQ==" not in patch_answer and '"PartialObjectMetadata"' in patch_answer
    assert fake.obj("v1", "secrets", "calico-etcd-secrets", "kube-system")["data"] == {"etcd-key": "c2VjcmV0LWtleQ=="}


def test_field_ownership_resolver_gives_plural_and_scope():
    resolver = Resolver(client_for(cluster()))
    assert resolver.resolve("v1", "Namespace") == ("namespaces", False)
    assert resolver.resolve("apps/v1", "Deployment") == ("deployments", True)
    assert resolver.resolve("nope/v1", "X") is None
