# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host endpoint migration, step "copy the labels onto the nodes" (a mixin of ``runner.Runner``): each
node gets its manual endpoint's labels (a merge patch of ``metadata.labels`` guarded by the node's
resourceVersion), in parallel. Calico's documentation: "Migrate to auto host endpoints".
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import ClientError
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.parallel import in_order
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints import rules

NODE_PATCH_RETRIES = 5


class LabelSteps(object):
    """Copy the manual endpoints' labels onto the nodes."""

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
        return in_order(func, jobs, self.workers)
