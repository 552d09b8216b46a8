"""Least privilege: docs/rbac.yml is what the playbooks need, and no more.

* each playbook runs to success with a ServiceAccount token bound only to the roles docs/rbac.yml names for its job
  (test_rbac.py's ``service_account`` fixture and ``token_run``): preflight and install_ebpf in
  tests/integration/test_rbac.py, owner_references and migrate_host_endpoints here, upgrade in test_secrets.py (the
  etcd upgrade runs with the upgrade job's token);
* no job's roles grant access to Secrets beyond the ones the collection writes: read from the rules of the file, and
  asked of the API server (SubjectAccessReview through ``kubectl auth can-i --as``).
"""

import json
import uuid

import pytest
import yaml

from localcp.api import Api

from kube_controllers import METRICS_OFF, KubeControllers, delete_automatic_endpoints
from test_host_endpoint_migration import HEPS, KCC, apply_crds, delete_crds, old_hep
from test_owner_references import CALICO, CRDS, calico_refs, coll, ref
from test_rbac import JOBS, RBAC, can_i, service_account, token_run  # noqa: F401 - service_account: a fixture

pytestmark = pytest.mark.integration

# The Secrets the collection writes, per job: (namespace, name); "*" for names it cannot know in advance.
WRITTEN_SECRETS = {
    "install": [("tigera-operator", "tigera-pull-secret")],
    "upgrade": [("kube-system", "calico-etcd-secrets"), ("tigera-operator", "*")],  # Helm's release Secrets
}
# Roles that write Secrets they cannot name in advance, in any namespace: the verbs they may have on every Secret,
# and why. Anything else on Secrets cluster-wide is a failure.
CLUSTER_WIDE_SECRET_GRANTS = {
    ("ClusterRole", "calico-ops-owner-references"): (
        {"get", "list", "patch"},
        "a dependent holding an owner reference to a projectcalico.org/v3 object can be a Secret in any namespace, "
        "and the garbage collector deletes it after the upgrade unless its reference is detached and re-attached: "
        "owner_references lists every type to find them and JSON-patches metadata.ownerReferences only; it reads "
        "metadata only (PartialObjectMetadata), so no Secret's data is sent to it"),
}
OTHER_NAMESPACES = ("default", "kube-system", "tigera-operator")


def role_doc(kind, name, namespace):
    for d in RBAC:
        if d["kind"] == kind and d["metadata"]["name"] == name and d["metadata"].get("namespace") == namespace:
            return d
    raise KeyError((kind, name, namespace))


def secret_rule_problems(job):
    """What the rules of the job's roles grant on Secrets beyond the Secrets the job writes."""
    problems = []
    written = WRITTEN_SECRETS.get(job, [])
    for kind, name, namespace in JOBS[job]:
        for rule in role_doc(kind, name, namespace).get("rules", []):
            if not (set(rule.get("apiGroups", [])) & {"", "*"} and set(rule.get("resources", [])) & {"secrets", "*"}):
                continue
            verbs = set(rule["verbs"])
            where = "%s %s%s" % (kind, name, " (namespace %s)" % namespace if namespace else "")
            granted, _why = CLUSTER_WIDE_SECRET_GRANTS.get((kind, name), (set(), ""))
            if granted:
                if verbs - granted:
                    problems.append("%s: %s on Secrets in every namespace, beyond %s" % (
                        where, sorted(verbs - granted), sorted(granted)))
                continue
            if namespace is None:
                problems.append("%s: %s on Secrets in every namespace" % (where, sorted(verbs)))
                continue
            allowed = [n for ns, n in written if ns == namespace]
            if not allowed:
                problems.append("%s: %s on Secrets, where the collection writes none" % (where, sorted(verbs)))
            elif verbs - {"create"} and "*" not in allowed:  # create cannot be limited by name, and reads nothing
                names = set(rule.get("resourceNames") or [])
                if not names or not names <= set(allowed):
                    problems.append("%s: %s on Secrets %s, not only %s" % (
                        where, sorted(verbs - {"create"}), sorted(names) or "(any)", allowed))
    return problems


@pytest.mark.parametrize("job", sorted(JOBS))
def test_no_access_to_secrets_beyond_those_the_collection_writes(cluster, service_account, job):  # noqa: F811
    problems = secret_rule_problems(job)
    _env, user = service_account(job)
    granted = set()
    for kind, name, _namespace in JOBS[job]:
        granted |= CLUSTER_WIDE_SECRET_GRANTS.get((kind, name), (set(), ""))[0]
    other = "calico-ops-unrelated-" + uuid.uuid4().hex[:5]
    if "list" not in granted and can_i(cluster, user, "list", "secrets", "--all-namespaces"):
        problems.append("the API server lets %s list Secrets in every namespace" % job)
    for ns in OTHER_NAMESPACES:
        for verb in ("get", "patch", "update", "delete"):
            if (ns, "*") in WRITTEN_SECRETS.get(job, []):
                break  # every Secret of that namespace is the collection's to write (Helm's release Secrets)
            if verb not in granted and can_i(cluster, user, verb, "secrets/" + other, "-n", ns):
                problems.append("the API server lets %s %s Secret %s/%s" % (job, verb, ns, other))
        if "list" not in granted and can_i(cluster, user, "list", "secrets", "-n", ns) \
                and (ns, "*") not in WRITTEN_SECRETS.get(job, []):
            problems.append("the API server lets %s list the Secrets of %s" % (job, ns))
        if "delete" not in granted and (ns, "*") not in WRITTEN_SECRETS.get(job, []) \
                and can_i(cluster, user, "deletecollection", "secrets", "-n", ns):
            problems.append("the API server lets %s delete the Secrets of %s" % (job, ns))
    for verb in sorted(granted):  # what a cluster-wide grant allows, it allows everywhere, and nothing more
        assert can_i(cluster, user, verb, "secrets/" + other, "-n", "default"), (job, verb)
    # and what it writes, it may write
    for ns, name in WRITTEN_SECRETS.get(job, []):
        if name != "*":
            assert can_i(cluster, user, "create", "secrets", "-n", ns), (job, ns)
            assert can_i(cluster, user, "patch", "secrets/" + name, "-n", ns), (job, ns, name)
    assert problems == []


def test_the_secret_rules_check_can_fail():
    """The static check is not vacuous: a rule like the ones the file had before (any Secret in the namespace), and
    the cluster-wide grant of owner_references widened by one verb."""
    JOBS["_probe"] = [("Role", "_probe", "tigera-operator"), ("ClusterRole", "calico-ops-owner-references", None)]
    RBAC.append({"kind": "Role", "metadata": {"name": "_probe", "namespace": "tigera-operator"},
                 "rules": [{"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "create"]}]})
    owner_refs = role_doc("ClusterRole", "calico-ops-owner-references", None)
    saved = owner_refs["rules"]
    owner_refs["rules"] = saved + [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["delete"]}]
    try:
        assert secret_rule_problems("_probe") == [
            "Role _probe (namespace tigera-operator): ['create', 'get'] on Secrets, where the collection writes none",
            "ClusterRole calico-ops-owner-references: ['delete'] on Secrets in every namespace, beyond "
            "['get', 'list', 'patch']"]
    finally:
        owner_refs["rules"] = saved
        del JOBS["_probe"]
        RBAC.pop()


def test_owner_references_runs_with_its_roles_only(cluster, service_account, namespace, tmp_path):  # noqa: F811
    api = Api(cluster)
    cluster.apply(yaml.safe_dump_all(CRDS))
    for crd in CRDS:
        cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/" + crd["metadata"]["name"])
    cluster.wait_for(lambda: api.get("/apis/projectcalico.org/v3"), timeout=60, what="projectcalico.org/v3")
    owner = api.create(coll(CALICO, "networkpolicies", namespace), {
        "apiVersion": CALICO, "kind": "NetworkPolicy", "metadata": {"name": "np", "namespace": namespace}})
    api.create(coll("v1", "configmaps", namespace), {"metadata": {
        "name": "dependent", "namespace": namespace, "ownerReferences": [ref(owner, controller=True)]}})
    record = "calico-ops-rbac-" + uuid.uuid4().hex[:6]
    env, user = service_account("owner-references")
    common = {"owner_references_record_name": record, "owner_references_record_path": str(tmp_path / "record.json")}
    try:
        # issue 36: the same identity, told to keep its record in a namespace where docs/rbac.yml gives it no
        # ConfigMap rights (it may patch the dependents there): refused before the first write, naming the variable
        mark = cluster.audit.mark()
        res = token_run("playbooks/owner_references.yml", env, tmp_path, owner_references_state="detached",
                        owner_references_record_namespace="default", **common)
        assert res.returncode != 0
        assert ("owner_references_record_namespace: the job's identity may not write the record ConfigMap "
                "default/%s" % record) in res.stdout, res.stdout[-4000:]
        assert cluster.audit.writes_since(mark, users=[user]) == []
        assert len(calico_refs(api.get(coll("v1", "configmaps", namespace) + "/dependent"))) == 1
        assert not (tmp_path / "record.json").exists()
        res = token_run("playbooks/owner_references.yml", env, tmp_path, owner_references_state="detached", **common)
        assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
        assert calico_refs(api.get(coll("v1", "configmaps", namespace) + "/dependent")) == []
        api.delete(coll(CALICO, "networkpolicies", namespace) + "/np", wait=True)
        owner = api.create(coll(CALICO, "networkpolicies", namespace), {
            "apiVersion": CALICO, "kind": "NetworkPolicy", "metadata": {"name": "np", "namespace": namespace}})
        res = token_run("playbooks/owner_references.yml", env, tmp_path, owner_references_state="attached", **common)
        assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
        refs = calico_refs(api.get(coll("v1", "configmaps", namespace) + "/dependent"))
        assert [r["uid"] for r in refs] == [owner["metadata"]["uid"]]
        # the records are kept where the job may write them, and nowhere else
        assert not can_i(cluster, user, "create", "configmaps", "-n", "default")
        assert not can_i(cluster, user, "delete", "configmaps/" + record, "-n", "kube-system")
    finally:
        cluster.kubectl("delete", "configmap", "-n", "kube-system", "-l", "lifecycle.calico-ops.io/record=" + record,
                        check=False)


def test_migrate_host_endpoints_runs_with_its_roles_only(cluster, service_account, tmp_path):  # noqa: F811
    created = apply_crds(cluster)
    api = Api(cluster)
    node = "rbac-hep-" + uuid.uuid4().hex[:5]
    record = "calico-ops-rbac-hep-" + uuid.uuid4().hex[:5]
    assert api.get(KCC) is None, "KubeControllersConfiguration default exists already: another test left it behind"
    try:
        api.req("POST", coll("crd.projectcalico.org/v1", "kubecontrollersconfigurations"), {
            "apiVersion": "crd.projectcalico.org/v1", "kind": "KubeControllersConfiguration",
            "metadata": {"name": "default"},
            "spec": dict(METRICS_OFF, controllers={"node": {"hostEndpoint": {"autoCreate": "Disabled"}}})})
        cluster.add_nodes([cluster.node_spec(node, labels={})])
        api.req("POST", HEPS, old_hep(node + "-all", node, {"env": "rbac"}))
        env, user = service_account("migrate-host-endpoints")
        # the real calico-kube-controllers creates the automatic endpoint (with calico.yaml's ClusterRole)
        with KubeControllers(cluster) as kube_controllers:
            res = token_run("playbooks/migrate_host_endpoints.yml", env, tmp_path,
                            host_endpoint_migration_record_name=record,
                            host_endpoint_migration_record_path=str(tmp_path / "record.json"),
                            host_endpoint_migration_poll_interval=0.5, host_endpoint_migration_wait_timeout=60)
            kc_log = kube_controllers.log()
        assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:] + kc_log
        assert api.get(HEPS + "/" + node + "-auto-hep") is not None
        assert api.get(HEPS + "/" + node + "-all") is None
        assert api.get("/api/v1/nodes/" + node)["metadata"]["labels"]["env"] == "rbac"
        assert json.loads(api.get(coll("v1", "configmaps", "kube-system") + "/" + record)["data"]["record.json"])
        assert not can_i(cluster, user, "delete", "nodes")
        assert not can_i(cluster, user, "patch", "daemonsets", "-n", "kube-system")
    finally:
        api.delete(KCC)  # kube-controllers stopped with its block: nothing creates default again
        delete_automatic_endpoints(cluster)
        for hep in api.items(HEPS):
            if hep["spec"].get("node") == node:
                api.delete(HEPS + "/" + hep["metadata"]["name"])
        cluster.remove_nodes([node])
        cluster.kubectl("delete", "configmap", "-n", "kube-system", record, "--ignore-not-found", check=False)
        delete_crds(cluster, created)
