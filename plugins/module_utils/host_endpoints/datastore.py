# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where host endpoints live: ``KubeDatastore`` (the Kubernetes API: ``projectcalico.org/v3`` when the Calico API
server serves HostEndpoints, else ``crd.projectcalico.org/v1``) and ``CalicoctlDatastore`` (the etcd datastore,
through ``calicoctl ... -o json``). Both refuse writes in check mode. Calico's documentation: "Migrate to auto
host endpoints" reads and writes the same resources.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import subprocess

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.client import (
    ClientError, ReadOnlyViolation)
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.errors import one_line, scrub_paths
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.host_endpoints import rules


V3 = "projectcalico.org/v3"
CRD = "crd.projectcalico.org/v1"
API_VERSIONS = ("auto", V3, CRD)


class DatastoreError(Exception):
    """HostEndpoints or KubeControllersConfiguration cannot be read or written."""


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
            raise DatastoreError("cannot run %s: %s" % (self.path, exc.strerror or type(exc).__name__))

    def _fail(self, args, rc, out, err):
        """calicoctl's own words, on one line and without local paths (its configuration names the etcd TLS files)."""
        return DatastoreError("calicoctl %s failed (rc=%s): %s" % (" ".join(args), rc,
                                                                   one_line(scrub_paths((err or out).strip()))))

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


def make_datastore(client, params):
    if params.get("datastore") == "etcd":
        return CalicoctlDatastore(path=params.get("calicoctl_path"), config=params.get("calicoctl_config"),
                                  extra_args=params.get("calicoctl_extra_args"),
                                  check_mode=bool(getattr(client, "check_mode", False)),
                                  timeout=params.get("calicoctl_timeout") or 120)
    return KubeDatastore(client, api_version=params.get("api_version") or "auto",
                         page_size=params.get("page_size") or 500)
