# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: the runner of the ``host_endpoint_migration`` module.

Replaces manually created all-interfaces host endpoints with the automatic ones calico-kube-controllers
creates, without leaving a node unprotected (Calico's documentation: "Migrate to auto host endpoints"). The rules
are in ``rules``; where endpoints live, ``datastore``; the steps, ``labels`` and ``replace``:

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

import os
import time

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError
# DEFAULT_WORKERS: the shared default, also the module's (plugins/modules/host_endpoint_migration.py imports it here)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.parallel import DEFAULT_WORKERS, workers_problem
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.report import (
    DEFAULT_REPORT_LIMIT, listed, report_limit_problem)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.store import (
    RecordStoreError, open_record_store, utc_now)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints import rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.datastore import (
    DatastoreError, make_datastore)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.labels import LabelSteps
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.replace import ReplaceSteps
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.rules import (
    JOB, HostEndpointMigrationError)

STATES = ("migrated", "restored")
DATASTORES = ("kubernetes", "etcd")
DEFAULT_RECORD_NAMESPACE = "kube-system"
DEFAULT_RECORD_NAME = "calico-ops-host-endpoint-migration"
DEFAULT_WAIT_TIMEOUT = 300
DEFAULT_POLL_INTERVAL = 2.0

_now = getattr(time, "monotonic", time.time)


def _more(items, shown, key):
    return " (and %d more: see %s)" % (len(items) - shown, key) if len(items) > shown else ""


# -- the runner --------------------------------------------------------------------------------------------


class Runner(LabelSteps, ReplaceSteps):
    """The job: plan, then (1) labels (``labels.LabelSteps``), (2) autoCreate (here), (3) wait, record and delete
    (``replace.ReplaceSteps``); or restore (``replace.ReplaceSteps.restore``)."""

    def __init__(self, client, datastore, label_conflicts="fail", wait_timeout=DEFAULT_WAIT_TIMEOUT,
                 poll_interval=DEFAULT_POLL_INTERVAL, record_namespace=DEFAULT_RECORD_NAMESPACE,
                 record_name=DEFAULT_RECORD_NAME, record_path=None, variable_prefix=None, progress_path=None,
                 diff=False, page_size=500, workers=DEFAULT_WORKERS, report_limit=DEFAULT_REPORT_LIMIT,
                 sleep=time.sleep, clock=_now):
        self.client = client
        self.report_limit = DEFAULT_REPORT_LIMIT if report_limit is None else report_limit
        self.datastore = datastore
        self.label_conflicts = label_conflicts or "fail"
        self.wait_timeout = float(wait_timeout if wait_timeout is not None else DEFAULT_WAIT_TIMEOUT)
        self.poll_interval = max(0.05, float(poll_interval or DEFAULT_POLL_INTERVAL))
        self.record_namespace = record_namespace or DEFAULT_RECORD_NAMESPACE
        self.record_name = record_name or DEFAULT_RECORD_NAME
        self.record_path = record_path
        self.variable_prefix = variable_prefix
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
        self.store = open_record_store(self.client, self.record_namespace, self.record_name, self.record_path, JOB,
                                       variable_prefix=self.variable_prefix)
        return self.store

    def _progress(self, message):
        if not self.progress_path or self.check_mode:
            return
        try:
            directory = os.path.dirname(self.progress_path)
            if directory and not os.path.isdir(directory):
                os.makedirs(directory, 0o700)
            # for its user only, like every file the collection writes
            with os.fdopen(os.open(self.progress_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "a") as handle:
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
            out.update({"label_conflicts": self.label_conflicts, "conflicts": self.conflicts,
                        "missing_nodes": self.missing_nodes, "kube_controllers": self.kube_controllers,
                        "not_replaced": self.not_replaced})
            listed(out, self.report_limit, endpoints=self.endpoints, labels=self.labels, nodes=self.nodes)
        else:
            listed(out, self.report_limit, endpoints=self.endpoints)
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


def run(client, params, diff=False, datastore=None, sleep=time.sleep, command=None):
    """Entry point for the module: ``params`` holds the module's options; ``command``: the module's command runner
    (calicoctl, with the etcd datastore)."""
    problem = workers_problem(params.get("workers")) or report_limit_problem(params.get("report_limit"))
    if problem:
        raise rules.HostEndpointMigrationError(problem + "; nothing was read or written", {"changed": False})
    runner = Runner(client, datastore or make_datastore(client, params, run=command),
                    label_conflicts=params.get("label_conflicts") or "fail",
                    wait_timeout=params.get("wait_timeout"),
                    poll_interval=params.get("poll_interval"),
                    record_namespace=params.get("record_namespace"),
                    record_name=params.get("record_name"),
                    record_path=params.get("record_path"),
                    variable_prefix=params.get("variable_prefix"),
                    progress_path=params.get("progress_path"),
                    diff=diff, page_size=params.get("page_size") or 500,
                    workers=params.get("workers") or DEFAULT_WORKERS,
                    report_limit=params.get("report_limit"), sleep=sleep)
    return runner.run(params.get("state") or "migrated")
