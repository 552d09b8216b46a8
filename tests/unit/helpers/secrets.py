"""A Secret with values in every place the redactor must reach (data, stringData, the last-applied annotation)."""

import base64
import json

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s import redact


def b64(text):
    return base64.b64encode(text.encode()).decode()


def secret(**extra):
    out = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
           "metadata": {"name": "s", "namespace": "ns", "annotations": {
               redact.LAST_APPLIED: json.dumps({"data": {"k": b64("hunter2-hunter2")}}), "keep": "me"}},
           "data": {"k": b64("hunter2-hunter2"), "empty": ""}, "stringData": {"p": "plain-password-1"}}
    out.update(extra)
    return out
