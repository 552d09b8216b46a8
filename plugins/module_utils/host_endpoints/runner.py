# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: the runner of the ``host_endpoint_migration`` module.

Replaces manually created all-interfaces host endpoints with the automatic ones calico-kube-controllers
creates, without leaving a node unprotected (the rules are in ``host_endpoint_migration_rules``):

* ``migrated``: read every HostEndpoint (``projectcalico.org/v3`` when the Calico API server serves it, else
  ``crd.projectcalico.org/v1``; with the etcd datastore through ``calicoctl get hostendpoints -o json``),
  every Node (one paginated LIST) and KubeControllersConfiguration ``default``, and plan. Conflicts block
  every write (unless ``label_conflicts`` says otherwise). Then (1) copy the labels onto the nodes (a merge
  patch of ``metadata.labels`` guarded by the node's resourceVersion, only where something changes),
  (2) set ``spec.controllers.node.hostEndpoint.autoCreate: Enabled`` (create ``default`` when missing),
  (3) poll the host endpoints (one LIST per round) until each node's automatic endpoint exists with the
  copied labels; then record that node's old endpoints (ConfigMaps and a controller file, through
  ``RecordStore``) and only then delete them (with a UID precondition). A node whose automatic endpoint
  does not appear in time keeps its old endpoint and is reported; the module fails at the end.
* ``restored``: create again every recorded endpoint that is not back yet, and mark it done.

Check mode plans and reads, and writes nothing (the ``Client`` and the calicoctl datastore refuse writes,
the record is not saved).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import time

try:
    from concurrent.futures import ThreadPoolExecutor
except ImportError:  # pragma: no cover - Python 2: one request at a time
    ThreadPoolExecutor = None

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import (
    ClientError, ReadOnlyViolation)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.store import (
    RecordStoreError, open_record_store, utc_now)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints import rules

JOB = "host_endpoint_migration"
STATES = ("migrated", "restored")
DATASTORES = ("kubernetes", "etcd")
V3 = "projectcalico.org/v3"
CRD = "crd.projectcalico.org/v1"
API_VERSIONS = ("auto", V3, CRD)
DEFAULT_RECORD_NAMESPACE = "kube-system"
DEFAULT_RECORD_NAME = "calico-ops-host-endpoint-migration"
DEFAULT_WAIT_TIMEOUT = 300
DEFAULT_POLL_INTERVAL = 2.0
NODE_PATCH_RETRIES = 5
DEFAULT_WORKERS = 8
# the record says which endpoints are deleted at the end of the run, and meanwhile at most this often
CHECKPOINT_SECONDS = 30.0

_now = getattr(time, "monotonic", time.time)


class HostEndpointMigrationError(Exception):
    """The job stopped or finished with problems; ``result`` is what it did and found."""

    def __init__(self, message, result):
        super(HostEndpointMigrationError, self).__init__(message)
        self.result = result


class DatastoreError(Exception):
    """HostEndpoints or KubeControllersConfiguration cannot be read or written."""


def _more(items, shown, key):
    return " (and %d more: see %s)" % (len(items) - shown, key) if len(items) > shown else ""


# -- datastores ------------------------------------------------------------------------------------------


class KubeDatastore(object):
    """Calico resources through the Kubernetes API: projectcalico.org/v3 when served, else the CRDs."""

    datastore = "kubernetes"

    def __init__(self, client, api_version="auto", page_size=500):
        self.client = client
        self.wanted = api_version or "auto"
        self.api_version = None
        self.page_size = page_size
        self.check_mode = bool(getattr(client, "check_mode", False))

    def _serves_host_endpoints(self, group_version):
        """True/False, or raise when the group-version is registered but cannot be read."""
        try:
            doc = self.client.request("GET", "/apis/%s" % group_version) or {}
        except ClientError as exc:
            if exc.status == 404:
                return False
            if exc.status in (401, 403):  # the credentials, not the Calico API server
                raise DatastoreError("cannot read %s: %s" % (group_version, exc))
            raise DatastoreError("%s is registered but its resources cannot be read (%s): with the Calico API "
                                 "server down, nothing can be planned" % (group_version, exc))
        return any(r.get("name") == rules.HEP_PLURAL for r in doc.get("resources") or [])

    def resolve(self):
        if self.api_version:
            return self.api_version
        if self.wanted != "auto":
            self.api_version = self.wanted
        elif self._serves_host_endpoints(V3):
            self.api_version = V3
        elif self._serves_host_endpoints(CRD):
            self.api_version = CRD
        else:
            raise DatastoreError("HostEndpoints are served neither by %s nor by %s: Calico is not installed with "
                                 "the Kubernetes API datastore (for the etcd datastore, set datastore=etcd)"
                                 % (V3, CRD))
        return self.api_version

    def describe(self):
        return {"datastore": self.datastore, "api_version": self.api_version}

    def list_host_endpoints(self):
        return self.client.list(self.api_version, rules.HEP_PLURAL, page_size=self.page_size)

    def get_kcc(self):
        return self.client.get(self.api_version, rules.KCC_PLURAL, rules.KCC_NAME)

    def create_kcc(self, body):
        """The created object, or None when it exists already (created meanwhile)."""
        try:
            return self.client.create(self.api_version, rules.KCC_PLURAL, body)
        except ClientError as exc:
            if exc.status == 409:
                return None
            raise

    def patch_kcc(self, patch):
        return self.client.merge_patch(self.api_version, rules.KCC_PLURAL, rules.KCC_NAME, patch)

    def delete_host_endpoint(self, ep):
        """True when deleted, False when it was already gone; ClientError 409 when the UID differs."""
        result = self.client.delete(self.api_version, rules.HEP_PLURAL, rules.name_of(ep),
                                    precondition_uid=rules.uid_of(ep) or None)
        return result is not None

    def create_host_endpoint(self, body):
        """The created object, or None when one with that name exists already."""
        try:
            return self.client.create(self.api_version, rules.HEP_PLURAL, body)
        except ClientError as exc:
            if exc.status == 409:
                return None
            raise


def _run_subprocess(argv, data=None, timeout=None):
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(input=data.encode("utf-8") if data is not None else None, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return 124, "", "timed out after %ss" % timeout
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def _not_found(text):
    text = text.lower()
    return "does not exist" in text or "not found" in text


class CalicoctlDatastore(object):
    """Calico resources through ``calicoctl`` (the etcd datastore): JSON output, writes refused in check mode."""

    datastore = "etcd"
    api_version = V3

    def __init__(self, path="calicoctl", config=None, extra_args=None, check_mode=False, run=None,
                 timeout=120):
        self.path = path or "calicoctl"
        self.config = config
        self.extra_args = list(extra_args or [])
        self.check_mode = check_mode
        self.run = run or _run_subprocess
        self.timeout = timeout
        self.requests = {"read": 0, "write": 0}

    def resolve(self):
        return self.api_version

    def describe(self):
        return {"datastore": self.datastore, "api_version": self.api_version, "calicoctl": self.path,
                "calicoctl_config": self.config}

    def _call(self, args, data=None, write=False):
        if write and self.check_mode:
            raise ReadOnlyViolation("check mode: refusing calicoctl %s" % " ".join(args))
        argv = [self.path] + list(args)
        if self.config:
            argv.append("--config=%s" % self.config)
        argv.extend(self.extra_args)
        self.requests["write" if write else "read"] += 1
        try:
            return self.run(argv, data, self.timeout)
        except OSError as exc:
            raise DatastoreError("cannot run %s: %s" % (self.path, exc))

    def _fail(self, args, rc, out, err):
        return DatastoreError("calicoctl %s failed (rc=%s): %s" % (" ".join(args), rc, (err or out).strip()))

    def _json(self, args):
        rc, out, err = self._call(args)
        if rc != 0:
            raise self._fail(args, rc, out, err)
        try:
            return json.loads(out) if out.strip() else None
        except ValueError:
            raise DatastoreError("calicoctl %s: the output is not JSON: %s" % (" ".join(args), out[:200]))

    def list_host_endpoints(self):
        doc = self._json(["get", "hostendpoints", "-o", "json"])
        if doc is None:
            return []
        if isinstance(doc, list):
            items = doc
        elif isinstance(doc, dict) and "items" in doc:
            items = doc.get("items") or []
        elif isinstance(doc, dict) and doc.get("kind") == rules.HEP_KIND:
            items = [doc]
        else:
            raise DatastoreError("calicoctl get hostendpoints: unexpected output %s" % json.dumps(doc)[:200])
        for item in items:
            item.setdefault("apiVersion", self.api_version)
            item.setdefault("kind", rules.HEP_KIND)
        return items

    def get_kcc(self):
        args = ["get", rules.KCC_PLURAL, rules.KCC_NAME, "-o", "json"]
        rc, out, err = self._call(args)
        if rc != 0:
            if _not_found(err + out):
                return None
            raise self._fail(args, rc, out, err)
        try:
            return json.loads(out)
        except ValueError:
            raise DatastoreError("calicoctl %s: the output is not JSON: %s" % (" ".join(args), out[:200]))

    def _create(self, body):
        args = ["create", "-f", "-"]
        rc, out, err = self._call(args, data=json.dumps(body), write=True)
        if rc != 0:
            if "already exists" in (err + out).lower():
                return None
            raise self._fail(args, rc, out, err)
        return body

    def create_kcc(self, body):
        return self._create(body)

    def patch_kcc(self, patch):
        args = ["patch", "kubecontrollersconfiguration", rules.KCC_NAME, "-p", json.dumps(patch)]
        rc, out, err = self._call(args, write=True)
        if rc != 0:
            raise self._fail(args, rc, out, err)

    def delete_host_endpoint(self, ep):
        args = ["delete", "hostendpoint", rules.name_of(ep)]
        rc, out, err = self._call(args, write=True)
        if rc != 0:
            if _not_found(err + out):
                return False
            raise self._fail(args, rc, out, err)
        return True

    def create_host_endpoint(self, body):
        return self._create(body)


# -- the runner --------------------------------------------------------------------------------------------


class Runner(object):
    def __init__(self, client, datastore, label_conflicts="fail", wait_timeout=DEFAULT_WAIT_TIMEOUT,
                 poll_interval=DEFAULT_POLL_INTERVAL, record_namespace=DEFAULT_RECORD_NAMESPACE,
                 record_name=DEFAULT_RECORD_NAME, record_path=None, progress_path=None, diff=False,
                 page_size=500, workers=DEFAULT_WORKERS, sleep=time.sleep, clock=_now):
        self.client = client
        self.datastore = datastore
        self.label_conflicts = label_conflicts or "fail"
        self.wait_timeout = float(wait_timeout if wait_timeout is not None else DEFAULT_WAIT_TIMEOUT)
        self.poll_interval = max(0.05, float(poll_interval or DEFAULT_POLL_INTERVAL))
        self.record_namespace = record_namespace or DEFAULT_RECORD_NAMESPACE
        self.record_name = record_name or DEFAULT_RECORD_NAME
        self.record_path = record_path
        self.progress_path = os.path.expanduser(progress_path) if progress_path else None
        self.want_diff = diff
        self.page_size = page_size
        self.workers = max(1, int(workers or 1))
        self.sleep = sleep
        self.clock = clock
        self.check_mode = bool(getattr(client, "check_mode", False))
        self.counts = {"host_endpoints": 0, "old": 0, "automatic": 0, "other": 0, "nodes": 0,
                       "nodes_labelled": 0, "labels_set": 0, "conflicts": 0, "missing_nodes": 0,
                       "deleted": 0, "already_gone": 0, "not_replaced": 0, "failed": 0,
                       "restored": 0, "already_present": 0, "not_deleted": 0}
        self.endpoints = []
        self._endpoint_info = {}  # name -> its item of self.endpoints
        self.labels = {}
        self.conflicts = []
        self.missing_nodes = []
        self.not_replaced = []
        self.failures = []
        self.kube_controllers = {}
        self.nodes = []
        self.diffs = []
        self.warnings = []
        self.timings = {}
        self.store = None

    # -- common --------------------------------------------------------------------------------------

    def _open_store(self):
        self.store = open_record_store(self.client, self.record_namespace, self.record_name, self.record_path, JOB)
        return self.store

    def _progress(self, message):
        if not self.progress_path or self.check_mode:
            return
        try:
            directory = os.path.dirname(self.progress_path)
            if directory and not os.path.isdir(directory):
                os.makedirs(directory, 0o700)
            with open(self.progress_path, "a") as handle:
                handle.write("%s %s\n" % (utc_now(), message))
        except (IOError, OSError) as exc:
            if not any("progress" in w for w in self.warnings):
                self.warnings.append("cannot write the progress file %s: %s" % (self.progress_path, exc))

    def _add_diff(self, header, before, after):
        if self.want_diff:
            self.diffs.append({"before_header": header, "after_header": header, "before": before,
                               "after": after})

    def result(self, state, changed):
        out = {"changed": changed, "state": state, "check_mode": self.check_mode,
               "datastore": self.datastore.describe(), "counts": dict(self.counts),
               "failures": self.failures, "warnings": list(self.warnings), "timings": dict(self.timings)}
        if state == "migrated":
            out.update({"label_conflicts": self.label_conflicts, "endpoints": self.endpoints,
                        "labels": self.labels, "conflicts": self.conflicts, "missing_nodes": self.missing_nodes,
                        "kube_controllers": self.kube_controllers, "nodes": self.nodes,
                        "not_replaced": self.not_replaced})
        else:
            out["endpoints"] = self.endpoints
        if self.store is not None:
            out["record"] = self.store.describe()
        if self.want_diff:
            out["diff"] = self.diffs
        return out

    def run(self, state):
        if state not in STATES:
            raise ValueError("state must be migrated or restored, not %r" % (state,))
        try:
            return self.migrate() if state == "migrated" else self.restore()
        except (ClientError, DatastoreError, RecordStoreError) as exc:
            raise HostEndpointMigrationError(str(exc), self.result(state, self._wrote()))

    # -- migrated: plan --------------------------------------------------------------------------------

    def _read(self):
        self.datastore.resolve()
        endpoints = self.datastore.list_host_endpoints()
        nodes = self.client.list("v1", "nodes", page_size=self.page_size)
        kcc = self.datastore.get_kcc()
        return endpoints, dict((rules.name_of(n), n) for n in nodes), kcc

    def _report_plan(self, endpoints, nodes, the_plan):
        self.counts["host_endpoints"] = len(endpoints)
        self.counts["old"] = len(the_plan["old"])
        self.counts["automatic"] = the_plan["automatic"]
        self.counts["other"] = the_plan["other"]
        self.counts["nodes"] = len(the_plan["nodes"])
        self.counts["conflicts"] = len(the_plan["conflicts"])
        self.counts["missing_nodes"] = len(the_plan["missing_nodes"])
        self.conflicts = the_plan["conflicts"]
        self.missing_nodes = the_plan["missing_nodes"]
        for node, item in sorted(the_plan["nodes"].items()):
            if item["set"]:
                self.labels[node] = dict(item["set"])
        missing = set(m["endpoint"] for m in the_plan["missing_nodes"])
        for ep in the_plan["old"]:
            info = rules.brief(ep)
            info["action"] = "node missing" if info["name"] in missing else "planned"
            self.endpoints.append(info)
            self._endpoint_info[info["name"]] = info
        if the_plan["missing_nodes"]:
            self.warnings.append("%d old host endpoint(s) name a node that does not exist and are left as they "
                                 "are: %s" % (len(missing), ", ".join(
                                     "%s (node %s)" % (m["endpoint"], m["node"] or "-")
                                     for m in the_plan["missing_nodes"][:20])
                                     + _more(the_plan["missing_nodes"], 20, "missing_nodes")))

    def _set_action(self, names, action, **extra):
        for name in names:
            info = self._endpoint_info.get(name)
            if info is not None:
                info["action"] = action
                info.update(extra)

    @staticmethod
    def _conflict_text(c):
        if c["kind"] == "endpoints":
            vals = ", ".join("%s=%s" % (e, v) for e, v in sorted(c["endpoint_values"].items()))
            return "node %s: its old host endpoints disagree on label %s (%s)" % (c["node"], c["key"], vals)
        ep, val = sorted(c["endpoint_values"].items())[0]
        return "node %s: label %s is %r on the node, %r on host endpoint %s" % (
            c["node"], c["key"], c["node_value"], val, ep)

    def _timed(self, name, since):
        now = self.clock()
        self.timings[name] = round(now - since, 2)
        return now

    def migrate(self):
        mark = self.clock()
        endpoints, nodes, kcc = self._read()
        mark = self._timed("read_s", mark)
        node_labels = dict((name, rules.labels_of(n)) for name, n in nodes.items())
        the_plan = rules.plan(endpoints, node_labels, self.label_conflicts)
        self._report_plan(endpoints, nodes, the_plan)
        api_version = self.datastore.api_version
        action, payload, problem = rules.kube_controllers_change(kcc, api_version)
        self.kube_controllers = {"name": rules.KCC_NAME, "api_version": api_version, "exists": kcc is not None,
                                 "auto_create_before": rules.auto_create_of(kcc),
                                 "auto_create_after": rules.ENABLED if action else rules.auto_create_of(kcc),
                                 "action": action if action else "blocked"}
        if the_plan["blocked"]:
            blocking = [c for c in the_plan["conflicts"] if c["resolution"] == "blocking"]
            for node in set(c["node"] for c in blocking):
                self._set_action(the_plan["nodes"][node]["endpoints"], "blocked by a label conflict")
            hint = ("set label_conflicts=overwrite (the endpoint's value wins) or skip (the node keeps its value)"
                    if any(c["kind"] == "node" for c in blocking) else
                    "set label_conflicts=skip (the key is not copied), or make the endpoints agree")
            raise HostEndpointMigrationError(
                "%d label conflict(s), nothing was written: %s%s. Resolve them, or %s." % (
                    len(blocking), "; ".join(self._conflict_text(c) for c in blocking[:10]),
                    _more(blocking, 10, "conflicts"), hint),
                self.result("migrated", False))
        if problem:
            raise HostEndpointMigrationError(problem + ". Nothing was written.", self.result("migrated", False))
        self._open_store()
        if self.check_mode:
            return self._plan_only(the_plan, nodes, endpoints, kcc, action, payload)
        changed = False
        self.labels = {}  # from here on: what was written
        try:
            excluded = self._copy_labels(the_plan, nodes)
            mark = self._timed("labels_s", mark)
            changed = self.counts["nodes_labelled"] > 0
            changed = self._enable_auto_create(kcc, action, payload) or changed
            mark = self._timed("kube_controllers_s", mark)
            changed = self._replace(the_plan, excluded) or changed
            self._timed("wait_and_delete_s", mark)
        except (ClientError, DatastoreError, RecordStoreError) as exc:
            raise HostEndpointMigrationError(str(exc), self.result("migrated", changed or self._wrote()))
        changed = changed or self._wrote()
        problems = []
        if self.not_replaced:
            problems.append("%d node(s) kept their old host endpoint(s) because their automatic host endpoint did "
                            "not appear with the copied labels within %ss: %s" % (
                                len(self.not_replaced), int(self.wait_timeout), "; ".join(
                                    "%s (%s)" % (n["node"], n["reason"]) for n in self.not_replaced[:20])
                                + _more(self.not_replaced, 20, "not_replaced")))
            hint = self._kcc_hint()
            if hint:
                problems.append(hint)
        if self.failures:
            problems.append("%d failure(s): %s%s" % (len(self.failures), "; ".join(
                f["error"] for f in self.failures[:10]), _more(self.failures, 10, "failures")))
        if problems:
            raise HostEndpointMigrationError(" ".join(problems), self.result("migrated", changed))
        return self.result("migrated", changed)

    def _wrote(self):
        if self.check_mode:
            return False
        return bool(self.counts["deleted"] or self.counts["nodes_labelled"] or self.counts["restored"]
                    or self.kube_controllers.get("action") in ("created", "patched"))

    def _plan_only(self, the_plan, nodes, endpoints, kcc, action, payload):
        """Check mode: what would be written; nothing is."""
        for node, labels in sorted(self.labels.items()):
            self.counts["nodes_labelled"] += 1
            self.counts["labels_set"] += len(labels)
            before = rules.labels_of(nodes[node])
            after = dict(before)
            after.update(labels)
            self._add_diff("Node %s" % node, {"metadata": {"labels": before}}, {"metadata": {"labels": after}})
        if action in ("create", "patch"):
            self.kube_controllers["action"] = "would " + action
            self._kcc_diff(kcc, action, payload)
        autos = rules.automatic_by_node(endpoints)
        by_name = dict((rules.name_of(ep), ep) for ep in the_plan["old"])
        would_delete = 0
        for node, item in sorted(the_plan["nodes"].items()):
            auto, why = rules.automatic_ready(autos.get(node) or [], item["copy"])
            info = {"node": node, "endpoints": item["endpoints"], "copied_labels": item["copy"],
                    "skipped_labels": item["skipped"],
                    "automatic_endpoint": rules.name_of(auto) if auto else None,
                    "status": "would replace" if auto else "would wait (%s)" % why}
            self.nodes.append(info)
            self._set_action(item["endpoints"], "would delete once the automatic host endpoint exists",
                             automatic_endpoint=info["automatic_endpoint"])
            would_delete += len(item["endpoints"])
            for name in item["endpoints"]:
                self._add_diff("HostEndpoint %s" % name, rules.recordable(by_name[name]), {})
        changed = bool(self.labels or action in ("create", "patch") or would_delete)
        return self.result("migrated", changed)

    def _kcc_diff(self, kcc, action, payload):
        after = rules.kcc_after(kcc, action, payload)
        self._add_diff("KubeControllersConfiguration default",
                       {"spec": (kcc or {}).get("spec")} if kcc else {},
                       {"spec": after.get("spec")})

    # -- migrated: (1) labels ------------------------------------------------------------------------------

    def _label_one(self, node, item, obj):
        """Patch one node's planned labels, planning again when its labels changed since the LIST.

        Returns (outcome, before, to_set, error): outcome ``labelled``, ``unchanged`` or ``failed``."""
        wanted = item["copy"]
        to_set = dict(item["set"])
        for _attempt in range(NODE_PATCH_RETRIES):
            if obj is None:
                return "failed", None, None, "node %s was deleted during the migration" % node
            if not to_set:
                return "unchanged", None, None, None
            meta = obj.get("metadata") or {}
            ops = rules.label_patch(meta.get("labels"), to_set, meta.get("resourceVersion"))
            try:
                self.client.json_patch("v1", "nodes", node, ops)
                return "labelled", rules.labels_of(obj), to_set, None
            except ClientError as exc:
                if exc.status not in (409, 422):
                    raise
            obj = self.client.get("v1", "nodes", node)  # its labels changed since the LIST: plan it again
            if obj is None:
                continue
            to_set, blocking = rules.node_labels_plan(rules.labels_of(obj), wanted, self.label_conflicts)
            if blocking:
                return "failed", None, None, "node %s: label %s changed to %r since the plan and conflicts with %r" % (
                    node, blocking[0]["key"], blocking[0]["node_value"], blocking[0]["endpoint_value"])
        return "failed", None, None, "node %s kept changing: its labels could not be copied" % node

    def _copy_labels(self, the_plan, nodes):
        """Patch the planned labels onto the nodes; return the nodes that must not go further."""
        excluded = set()
        todo = [(node, the_plan["nodes"][node]) for node in sorted(the_plan["nodes"])
                if the_plan["nodes"][node]["set"]]
        outcomes = self._parallel(lambda job: self._label_one(job[0], job[1], nodes[job[0]]), todo)
        unexpected = None
        for (node, _item), (outcome, error) in zip(todo, outcomes):
            if error is not None:
                if not isinstance(error, ClientError):
                    unexpected = unexpected or error
                    continue
                outcome = ("failed", None, None, "node %s: the labels could not be copied: %s" % (node, error))
            status, before, to_set, message = outcome
            if status == "failed":
                self.failures.append({"node": node, "error": message})
                self.counts["failed"] += 1
                excluded.add(node)
                continue
            if status == "unchanged":
                continue
            after = dict(before)
            after.update(to_set)
            self._add_diff("Node %s" % node, {"metadata": {"labels": before}}, {"metadata": {"labels": after}})
            self.counts["nodes_labelled"] += 1
            self.counts["labels_set"] += len(to_set)
            self.labels[node] = dict(to_set)
            self._progress("node %s: labels copied: %s" % (node, ", ".join(
                "%s=%s" % kv for kv in sorted(to_set.items()))))
        if unexpected is not None:
            raise unexpected
        return excluded

    def _parallel(self, func, jobs):
        """[(result, exception)] of ``func`` over ``jobs``, in order; ``workers`` requests at a time."""
        def call(job):
            try:
                return func(job), None
            except Exception as exc:  # pylint: disable=broad-except
                return None, exc
        if self.workers <= 1 or len(jobs) <= 1 or ThreadPoolExecutor is None:
            return [call(job) for job in jobs]
        with ThreadPoolExecutor(max_workers=min(self.workers, len(jobs))) as pool:
            return list(pool.map(call, jobs))

    # -- migrated: (2) autoCreate ------------------------------------------------------------------------------

    def _enable_auto_create(self, kcc, action, payload):
        if action == "unchanged":
            return False
        if action == "create":
            created = self.datastore.create_kcc(payload)
            if created is None or created is False:  # someone created it meanwhile: patch theirs if needed
                kcc = self.datastore.get_kcc()
                action, payload, problem = rules.kube_controllers_change(kcc, self.datastore.api_version)
                if problem:
                    raise DatastoreError(problem)
                if action == "unchanged":
                    self.kube_controllers["action"] = "unchanged"
                    return False
                self.datastore.patch_kcc(payload)
                self.kube_controllers["action"] = "patched"
            else:
                self.kube_controllers["action"] = "created"
        else:
            self.datastore.patch_kcc(payload)
            self.kube_controllers["action"] = "patched"
        self._kcc_diff(kcc, "create" if self.kube_controllers["action"] == "created" else "patch", payload)
        self._progress("KubeControllersConfiguration default: autoCreate Enabled (%s)"
                       % self.kube_controllers["action"])
        return True

    def _kcc_hint(self):
        try:
            kcc = self.datastore.get_kcc()
        except (ClientError, DatastoreError):
            return None
        running = ((kcc or {}).get("status") or {}).get("runningConfig")
        if running is None:
            return ("Is calico-kube-controllers running? KubeControllersConfiguration default has no "
                    "status.runningConfig.")
        if rules.auto_create_of({"spec": running}) != rules.ENABLED:
            return ("calico-kube-controllers does not run automatic host endpoints: its status.runningConfig "
                    "says node.hostEndpoint.autoCreate=%s (is the node controller enabled, e.g. in "
                    "ENABLED_CONTROLLERS?)" % rules.auto_create_of({"spec": running}))
        return None

    # -- migrated: (3) wait, record, delete --------------------------------------------------------------------

    def _entry_key(self, ep):
        """A key of the record that is not done yet (a done entry with the same UID starts a new cycle)."""
        key = rules.entry_key(ep)
        n = 1
        candidate = key
        while True:
            entry = self.store.get(candidate)
            if entry is None or not entry.get("done"):
                return candidate
            n += 1
            candidate = "%s|%d" % (key, n)

    def _record_all(self, pending, by_name):
        """Record every old endpoint that may be deleted (one save, before the first delete): name -> key."""
        store = self.store
        keys = {}
        new = 0
        for node in sorted(pending):
            for name in pending[node]["endpoints"]:
                ep = by_name[name]
                keys[name] = self._entry_key(ep)
                if store.add(keys[name], {"endpoint": rules.recordable(ep), "node": node,
                                          "datastore": self.datastore.datastore,
                                          "api_version": self.datastore.api_version}):
                    new += 1
        if new:
            store.meta.update({"job": JOB})
            store.save()  # durable before the first of these endpoints is deleted
            self._progress("%d old host endpoint(s) recorded in ConfigMap %s/%s and %s" % (
                new, self.record_namespace, self.record_name, store.path))
        return keys

    def _replace(self, the_plan, excluded):
        by_name = dict((rules.name_of(ep), ep) for ep in the_plan["old"])
        pending = dict((node, item) for node, item in the_plan["nodes"].items() if node not in excluded)
        if not pending:
            return False
        keys = self._record_all(pending, by_name)
        started = self.clock()
        deadline = started + self.wait_timeout
        self._progress("waiting up to %ss for the automatic host endpoints of %d node(s)"
                       % (int(self.wait_timeout), len(pending)))
        changed = False
        reasons = {}
        self._checkpoint = {"dirty": False, "at": self.clock()}
        try:
            while pending:
                current = self.datastore.list_host_endpoints()
                autos = rules.automatic_by_node(current)
                present = dict((rules.name_of(ep), ep) for ep in current)
                ready = []
                for node in sorted(pending):
                    auto, why = rules.automatic_ready(autos.get(node) or [], pending[node]["copy"])
                    if auto is None:
                        reasons[node] = why
                    else:
                        ready.append((node, auto))
                if ready:
                    changed = self._delete_replaced(ready, pending, by_name, keys, present, started) or changed
                    for node, _auto in ready:
                        pending.pop(node, None)
                    self._progress("%d node(s) done, %d waiting" % (len(self.nodes), len(pending)))
                    self._save_checkpoint()
                if not pending or self.clock() >= deadline:
                    break
                self.sleep(min(self.poll_interval, max(0.0, deadline - self.clock())))
        except Exception:
            self._save_checkpoint(force=True)
            raise
        self._save_checkpoint(force=True)
        for node in sorted(pending):
            item = pending[node]
            self.not_replaced.append({"node": node, "endpoints": item["endpoints"], "reason": reasons.get(node)})
            self.nodes.append({"node": node, "endpoints": item["endpoints"], "copied_labels": item["copy"],
                               "skipped_labels": item["skipped"], "automatic_endpoint": None,
                               "status": "not replaced", "reason": reasons.get(node),
                               "waited_s": round(self.clock() - started, 1)})
            self._set_action(item["endpoints"], "kept (no automatic host endpoint with the copied labels)")
            self._progress("node %s: %s after %ss: old host endpoint(s) %s kept" % (
                node, reasons.get(node), int(self.clock() - started), ", ".join(item["endpoints"])))
        self.counts["not_replaced"] = len(self.not_replaced)
        return changed

    def _save_checkpoint(self, force=False):
        """Save the record's "deleted" marks: at the end, and meanwhile every CHECKPOINT_SECONDS (a run killed
        in between loses only marks: restore tells deleted endpoints by their absence)."""
        point = self._checkpoint
        if point["dirty"] and (force or self.clock() - point["at"] >= CHECKPOINT_SECONDS):
            point["dirty"] = False
            self.store.save()
            point["at"] = self.clock()

    def _delete_replaced(self, ready, pending, by_name, keys, present, started):
        """Delete the (recorded) old endpoints of the nodes whose automatic endpoint is ready."""
        store = self.store
        todo = []  # (node, auto name, endpoint as it is now or None when gone, key)
        resave = False
        for node, auto in ready:
            for name in pending[node]["endpoints"]:
                ep = by_name[name]
                now = present.get(name)
                if now is None or rules.uid_of(now) != rules.uid_of(ep):
                    todo.append((node, rules.name_of(auto), ep, None))  # gone (or replaced) already
                    continue
                if rules.endpoint_labels(now) != rules.endpoint_labels(ep):
                    self.counts["failed"] += 1
                    self.failures.append({"node": node, "endpoint": name, "error": (
                        "HostEndpoint %s: its labels changed since the plan, so it is kept; run again to copy "
                        "them" % name)})
                    self._set_action([name], "kept (labels changed since the plan)")
                    continue
                if store.get(keys[name])["endpoint"] != rules.recordable(now):
                    store.update(keys[name], endpoint=rules.recordable(now))  # changed since recorded
                    resave = True
                todo.append((node, rules.name_of(auto), now, keys[name]))
        if resave:
            store.save()  # the record holds what is about to be deleted
        changed = False
        waited = round(self.clock() - started, 1)
        per_node = {}
        to_delete = [job for job in todo if job[3] is not None]
        results = dict(zip([job[3] for job in to_delete],
                           self._parallel(lambda job: self.datastore.delete_host_endpoint(job[2]), to_delete)))
        for node, auto_name, ep, key in todo:
            name = rules.name_of(ep)
            outcome = per_node.setdefault(node, {"deleted": [], "auto": auto_name})
            deleted, error = results[key] if key is not None else (False, None)
            if error is not None:
                if not isinstance(error, (ClientError, DatastoreError)):
                    raise error
                self.counts["failed"] += 1
                self.failures.append({"node": node, "endpoint": name, "error": "delete HostEndpoint %s: %s"
                                      % (name, error)})
                self._set_action([name], "failed", automatic_endpoint=auto_name)
                continue
            if deleted:
                self.counts["deleted"] += 1
                changed = True
                outcome["deleted"].append(name)
                store.update(key, deleted=True, deleted_at=utc_now(), automatic_endpoint=auto_name)
                self._checkpoint["dirty"] = True
                self._set_action([name], "deleted", automatic_endpoint=auto_name)
                self._add_diff("HostEndpoint %s" % name, rules.recordable(ep), {})
            else:
                self.counts["already_gone"] += 1
                self._set_action([name], "already gone", automatic_endpoint=auto_name)
        for node, auto in ready:
            outcome = per_node.get(node) or {"deleted": [], "auto": rules.name_of(auto)}
            item = pending[node]
            self.nodes.append({"node": node, "endpoints": item["endpoints"], "copied_labels": item["copy"],
                               "skipped_labels": item["skipped"], "automatic_endpoint": outcome["auto"],
                               "status": "replaced", "deleted": outcome["deleted"], "waited_s": waited})
            self._progress("node %s: automatic host endpoint %s present after %ss; old host endpoint(s) deleted: %s"
                           % (node, outcome["auto"], waited, ", ".join(outcome["deleted"]) or "-"))
        return changed

    # -- restored ----------------------------------------------------------------------------------------------

    def restore(self):
        store = self._open_store()
        pending = store.pending()
        if not pending:
            return self.result("restored", False)
        api_version = self.datastore.resolve()
        current = dict((rules.name_of(ep), ep) for ep in self.datastore.list_host_endpoints())
        changed = False
        try:
            for key in pending:
                entry = store.get(key)
                recorded = entry.get("endpoint") or {}
                name = rules.name_of(recorded)
                info = {"name": name, "node": entry.get("node"), "labels": rules.endpoint_labels(recorded),
                        "uid": rules.uid_of(recorded)}
                self.endpoints.append(info)
                existing = current.get(name)
                if existing is not None:
                    same = rules.uid_of(existing) == rules.uid_of(recorded)
                    outcome = "not deleted" if same else "already present"
                    self.counts["not_deleted" if same else "already_present"] += 1
                    info["action"] = outcome
                    if not self.check_mode:
                        store.mark_done(key, outcome=outcome)
                        changed = True
                    continue
                body = rules.restore_body(recorded, api_version)
                if self.check_mode:
                    info["action"] = "would restore"
                    self.counts["restored"] += 1
                    self._add_diff("HostEndpoint %s" % name, {}, body)
                    changed = True
                    continue
                try:
                    created = self.datastore.create_host_endpoint(body)
                except (ClientError, DatastoreError) as exc:
                    self.counts["failed"] += 1
                    self.failures.append({"endpoint": name, "error": "create HostEndpoint %s: %s" % (name, exc)})
                    info["action"] = "failed"
                    continue
                changed = True
                if created is None:
                    self.counts["already_present"] += 1
                    info["action"] = "already present"
                    store.mark_done(key, outcome="already present")
                    continue
                self.counts["restored"] += 1
                info["action"] = "restored"
                store.mark_done(key, outcome="restored", restored_uid=rules.uid_of(created) or None)
                self._add_diff("HostEndpoint %s" % name, {}, body)
                self._progress("host endpoint %s restored" % name)
        finally:
            if changed and not self.check_mode:
                store.save()
        if self.failures:
            raise HostEndpointMigrationError("%d host endpoint(s) could not be restored: %s" % (
                len(self.failures), "; ".join(f["error"] for f in self.failures[:10])),
                self.result("restored", changed))
        return self.result("restored", changed)


def make_datastore(client, params):
    if params.get("datastore") == "etcd":
        return CalicoctlDatastore(path=params.get("calicoctl_path"), config=params.get("calicoctl_config"),
                                  extra_args=params.get("calicoctl_extra_args"),
                                  check_mode=bool(getattr(client, "check_mode", False)),
                                  timeout=params.get("calicoctl_timeout") or 120)
    return KubeDatastore(client, api_version=params.get("api_version") or "auto",
                         page_size=params.get("page_size") or 500)


def run(client, params, diff=False, datastore=None, sleep=time.sleep):
    """Entry point for the module: ``params`` holds the module's options."""
    runner = Runner(client, datastore or make_datastore(client, params),
                    label_conflicts=params.get("label_conflicts") or "fail",
                    wait_timeout=params.get("wait_timeout"),
                    poll_interval=params.get("poll_interval"),
                    record_namespace=params.get("record_namespace"),
                    record_name=params.get("record_name"),
                    record_path=params.get("record_path"),
                    progress_path=params.get("progress_path"),
                    diff=diff, page_size=params.get("page_size") or 500,
                    workers=params.get("workers") or DEFAULT_WORKERS, sleep=sleep)
    return runner.run(params.get("state") or "migrated")
