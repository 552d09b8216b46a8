# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host endpoint migration, steps "wait, record, delete" and "restore" (a mixin of ``runner.Runner``):
wait until each node's automatic endpoint exists with the copied labels, record the node's old endpoints,
then delete them (UID precondition); ``restored`` creates the recorded ones again. Calico's documentation:
"Migrate to auto host endpoints".
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.records.store import utc_now
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints import rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.datastore import DatastoreError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints.rules import (
    JOB, HostEndpointMigrationError)

# the record says which endpoints are deleted at the end of the run, and meanwhile at most this often
CHECKPOINT_SECONDS = 30.0


class ReplaceSteps(object):
    """Wait for the automatic endpoints, record and delete the old ones; restore them."""

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

    def _deletions(self, ready, pending, by_name, keys, present):
        """What to delete: ``(node, auto name, endpoint as it is now or the recorded one when gone, key or None when
        gone)``. An endpoint whose labels changed since the plan is kept (a failure); one changed otherwise is recorded
        again, and the record saved, before anything is deleted."""
        store = self.store
        todo = []
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
        return todo

    def _delete_replaced(self, ready, pending, by_name, keys, present, started):
        """Delete the (recorded) old endpoints of the nodes whose automatic endpoint is ready."""
        todo = self._deletions(ready, pending, by_name, keys, present)
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
                self.store.update(key, deleted=True, deleted_at=utc_now(), automatic_endpoint=auto_name)
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
