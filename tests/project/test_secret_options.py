"""Options that carry a secret are no_log, in module argument specs and in roles' argument specs; manifest_apply's
secret_data puts values back into redacted Secret documents and refuses one still redacted."""

import base64
import glob
import os
import re

import yaml

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.redact import MARKER, redact_object
from ansible_collections.calico_ops.lifecycle.plugins.modules import manifest_apply

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SECRET_NAME = re.compile(r"(_key|_cert|_ca|_token|_password|pull_secret|_api_key|secret_data)$")


def test_role_options_that_carry_a_secret_are_no_log():
    seen = []
    for path in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml"))):
        specs = yaml.safe_load(open(path))["argument_specs"]
        for entry in specs.values():
            for name, opt in (entry.get("options") or {}).items():
                if SECRET_NAME.search(name) and opt.get("type", "str") == "str":
                    seen.append(name)
                    assert opt.get("no_log") is True, "%s: %s carries a secret but is not no_log" % (path, name)
    assert {"upgrade_etcd_key", "upgrade_etcd_cert", "upgrade_etcd_ca", "ebpf_install_pull_secret"} <= set(seen)


def test_module_options_that_carry_a_secret_are_no_log():
    seen = []
    for path in sorted(glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py"))):
        doc = yaml.safe_load(re.search(r'DOCUMENTATION = r"""(.*?)"""', open(path).read(), re.S).group(1))
        source = open(path).read()
        for name in doc.get("options") or {}:
            if SECRET_NAME.search(name):
                seen.append(name)
                assert re.search(r"\b%s=dict\([^)]*no_log=True" % name, source), "%s: %s is not no_log" % (path, name)
    assert {"etcd_key", "etcd_cert", "etcd_ca", "secret_data"} <= set(seen)


def test_secret_data_fills_a_redacted_secret_and_a_marker_left_is_refused():
    doc = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "calico-etcd-secrets"},
           "data": {"etcd-key": "a2V5", "etcd-ca": "Y2E="}}
    docs = [redact_object(doc), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                                 "data": {"k": MARKER}}]
    assert manifest_apply.fill_secret_data(docs, {"calico-etcd-secrets": {"etcd-key": "KEY"}}) == [
        "Secret calico-etcd-secrets: data.etcd-ca holds the redaction marker %s, not a value: give the value in "
        "secret_data (calico-etcd-secrets: {etcd-ca: ...})" % MARKER]
    assert base64.b64decode(docs[0]["data"]["etcd-key"]) == b"KEY"
    docs = [redact_object(doc)]
    assert manifest_apply.fill_secret_data(docs, {"calico-etcd-secrets": {"etcd-key": "KEY", "etcd-ca": "CA"}}) == []
    assert base64.b64decode(docs[0]["data"]["etcd-ca"]) == b"CA"
    assert manifest_apply.fill_secret_data([dict(doc)], {}) == []  # values in the document: nothing to fill
