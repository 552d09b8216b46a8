#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: manifest_apply
short_description: Server-side apply of manifests that writes only what would change
version_added: 0.1.0
description:
  - Applies documents with server-side apply under one field manager (conflicts forced by default), in
    order; objects of a CRD applied earlier in the same call are applied once the CRD is served.
  - Every document is first sent as a server-side dry run, before the first write; when the API server rejects
    any of them the module fails naming each rejected document with the server's message, and writes nothing.
    (Objects of a type a CRD of the same call creates, or whose dry run needs an object the same call creates
    - their namespace, the ClusterRole a new binding grants - cannot be dry-run before that write; they are
    dry-run when reached.)
  - The dry run shows what each object would become; only an object that would change is applied for real.
    A re-run therefore makes no write, check mode makes none (dry runs persist nothing), and the diff is the
    server's own answer.
  - Live objects are read with one paginated LIST per type when several documents share a type.
  - Can wait for applied CustomResourceDefinitions to be Established.
author:
  - calico_ops maintainers (@calico-ops)
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
  - calico_ops.lifecycle.attributes
options:
  definition:
    description: The documents (a list of dicts, a dict, or multi-document YAML text).
    type: raw
    required: true
  namespace:
    description: Namespace for namespaced documents that name none.
    type: str
  field_manager:
    description: The server-side apply field manager.
    type: str
    default: calico-ops
  force_conflicts:
    description: Take ownership of fields another manager owns.
    type: bool
    default: true
  wait_established:
    description: Wait until every applied CustomResourceDefinition is Established.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait for CRDs (served and Established).
    type: int
    default: 120
  secret_data:
    description:
      - Values of Secret documents' C(data), by Secret name (a dict of Secret name to a dict of key to plain
        text), base64-encoded into the document of that name before the apply. This is how the documents another module of this
        collection returns (redacted, for example by M(calico_ops.lifecycle.upgrade_manifest)) get their
        values back without the values being in any result.
      - A Secret document whose C(data) still holds the redaction marker of a result is refused, naming it and
        the key, before any request.
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    description: Only server-side dry runs are sent; nothing is persisted.
  diff_mode:
    support: full
    description: Before and after of every object that would change.
notes:
  - The values of a Secret's C(data) and C(stringData) are never returned nor shown in the diff (the keys are);
    neither are the C(spec.token) and C(spec.certificate) of a C(LicenseKey).
"""

EXAMPLES = r"""
- name: Apply the operator CRDs and wait for them
  calico_ops.lifecycle.manifest_apply:
    definition: "{{ lookup('ansible.builtin.url', base ~ '/operator-crds.yaml', split_lines=false) }}"
    wait_established: true
"""

RETURN = r"""
results:
  description: One entry per document, with what happened to it.
  returned: always
  type: list
  elements: dict
  sample:
    - {apiVersion: apps/v1, kind: Deployment, name: tigera-operator, namespace: tigera-operator, action: unchanged}
counts:
  description: How many documents were created, updated and unchanged.
  returned: always
  type: dict
  sample: {created: 0, updated: 1, unchanged: 31}
rejected:
  description: The documents the API server rejected in the dry run (nothing was written), with its message.
  returned: when the dry run rejected a document
  type: list
  elements: dict
  sample:
    - {document: DaemonSet kube-system/calico-node, apiVersion: apps/v1, status: 422,
       message: "PATCH /apis/apps/v1/...: 422 Unprocessable Entity: DaemonSet.apps \"calico-node\" is invalid: ..."}
not_established:
  description: CRDs that were not Established within the timeout (the task fails then).
  returned: when wait_established
  type: list
  elements: str
waited_s:
  description: Seconds spent waiting for the CRDs to be Established (0 in check mode), apart from the applies.
  returned: when wait_established
  type: float
  sample: 0.42
nudged:
  description:
    - CRDs whose names the API server had accepted but that it had not established 10 seconds into the wait (its
      establishing queue is lost when it restarts in between, and only an update of the CRD refills it). Each got
      an update event (an annotation set and removed again), which counts as a change.
  returned: when wait_established
  type: list
  elements: str
"""

import base64
import time


from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s import yaml_text
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.objects.apply import (
    ApplyError, apply_documents, wait_crds_established)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.module import K8sModule
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.redact import MARKER, is_secret


def fill_secret_data(docs, secret_data):
    """Put the values of ``secret_data`` (Secret name -> key -> plain text) base64-encoded into the Secret documents
    of those names; return the problems (a Secret whose data still holds ``MARKER``), naming document and key."""
    problems = []
    for doc in docs:
        if not isinstance(doc, dict) or not is_secret(doc):
            continue
        name = (doc.get("metadata") or {}).get("name")
        values = (secret_data or {}).get(name) or {}
        if values:
            data = dict(doc.get("data") or {})
            for key, value in values.items():
                if value is not None:
                    text = value if isinstance(value, bytes) else str(value).encode("utf-8")
                    data[key] = base64.b64encode(text).decode("ascii")
            doc["data"] = data
        for field in ("data", "stringData"):
            for key, value in (doc.get(field) or {}).items():
                if value == MARKER:
                    problems.append("Secret %s: %s.%s holds the redaction marker %s, not a value: give the value "
                                    "in secret_data (%s: {%s: ...})" % (name, field, key, MARKER, name, key))
    return problems


def _apply(m):
    p = m.params
    try:
        docs = yaml_text.documents(p["definition"])
    except yaml_text.YAMLError as exc:
        m.fail("definition: not valid YAML: %s" % exc)
    problems = fill_secret_data(docs, p["secret_data"])
    if problems:
        m.fail("; ".join(problems) + " (nothing was sent)")
    client = m.client(field_manager=p["field_manager"])
    results, changed = apply_documents(client, docs, p["field_manager"], force=p["force_conflicts"],
                                       check_mode=m.check_mode, namespace=p["namespace"], wait=p["wait_timeout"])
    not_established, nudged, waited = [], [], 0.0
    if p["wait_established"] and not m.check_mode:
        crds = [r["name"] for r in results if r["kind"] == "CustomResourceDefinition"]
        started = time.monotonic()
        not_established, nudged = wait_crds_established(client, crds, p["wait_timeout"])
        waited = time.monotonic() - started
    if nudged:
        changed = True
        m.module.warn("CustomResourceDefinitions whose names were accepted but that the API server had not "
                      "established (as after an API server restart between the two): given an update event so it "
                      "does: %s" % ", ".join(nudged))
    for r in results:
        if r.get("note"):
            m.module.warn("check mode: %s %s would be created; %s (an earlier step would install its CRD)"
                          % (r["kind"], r["name"], r["note"]))
    counts = dict((a, sum(1 for r in results if r["action"] == a)) for a in ("created", "updated", "unchanged"))
    out = dict(changed=changed, counts=counts, requests=client.requests,
               results=[dict((k, v) for k, v in r.items() if k not in ("before", "after")) for r in results])
    if m.diff:
        out["diff"] = [dict(before=r["before"], after=r["after"],
                            before_header="%s %s" % (r["kind"], r["name"]),
                            after_header="%s %s" % (r["kind"], r["name"]))
                       for r in results if r["action"] != "unchanged"]
    if p["wait_established"]:
        out["waited_s"] = round(waited, 3)
        out["not_established"] = not_established
        out["nudged"] = nudged
        if not_established:
            m.fail("CustomResourceDefinitions not Established after %ss: %s"
                   % (p["wait_timeout"], ", ".join(not_established)), **out)
    return out


def _subject(params):
    """The documents a failure before any request names: ``Kind namespace/name`` of the first few."""
    try:
        docs = yaml_text.documents(params["definition"])
    except Exception:  # the YAML error is reported by _apply
        docs = []
    names = []
    for doc in docs[:3]:
        meta = (doc.get("metadata") or {}) if isinstance(doc, dict) else {}
        where = "/".join(x for x in (meta.get("namespace") or params["namespace"], meta.get("name")) if x)
        names.append("%s %s" % (doc.get("kind") if isinstance(doc, dict) else "document", where))
    return ", ".join(names) + (" and %d more" % (len(docs) - 3) if len(docs) > 3 else "")


def main():
    K8sModule(dict(
        definition=dict(type="raw", required=True),
        namespace=dict(type="str"),
        field_manager=dict(type="str", default="calico-ops"),
        force_conflicts=dict(type="bool", default=True),
        wait_established=dict(type="bool", default=False),
        wait_timeout=dict(type="int", default=120),
        secret_data=dict(type="dict", default={}, no_log=True),
    ), errors=(ApplyError,), subject=_subject).run(_apply)


if __name__ == "__main__":
    main()
