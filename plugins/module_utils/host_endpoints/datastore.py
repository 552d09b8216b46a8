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
import os

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.calico.calicoctl import (
    CalicoctlConfigError, etcd_environment, etcd_settings)
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
        return self._create_new(rules.KCC_PLURAL, body)

    def patch_kcc(self, patch):
        return self.client.merge_patch(self.api_version, rules.KCC_PLURAL, rules.KCC_NAME, patch)

    def delete_host_endpoint(self, ep):
        """True when deleted, False when it was already gone; ClientError 409 when the UID differs."""
        result = self.client.delete(self.api_version, rules.HEP_PLURAL, rules.name_of(ep),
                                    precondition_uid=rules.uid_of(ep) or None)
        return result is not None

    def create_host_endpoint(self, body):
        """The created object, or None when one with that name exists already."""
        return self._create_new(rules.HEP_PLURAL, body)

    def _create_new(self, plural, body):
        try:
            return self.client.create(self.api_version, plural, body)
        except ClientError as exc:
            if exc.status == 409:
                return None
            raise


def _not_found(text):
    text = text.lower()
    return "does not exist" in text or "not found" in text


KDD_CLUSTER_INFORMATION = ("crd.projectcalico.org/v1", "clusterinformations", "default")


class CalicoctlDatastore(object):
    """Calico resources through ``calicoctl`` (the etcd datastore): JSON output, writes refused in check mode.

    Every call runs with the etcd datastore explicitly (``calico/calicoctl.py``); ``resolve()``, before the job's first
    read or write, proves that calicoctl reaches etcd: its settings are etcd's, and the cluster it reports is not the
    one the Kubernetes API holds (a wrapper script or a configuration that points calicoctl at the Kubernetes
    datastore would otherwise have the job change that datastore while it reports an etcd migration).
    ``run(argv, data, timeout, environ_update)`` runs a command (the module's ``run_command``); ``client``: the
    Kubernetes API, for the comparison; ``names``: the variables a failure names."""

    datastore = "etcd"
    api_version = V3

    def __init__(self, path="calicoctl", config=None, extra_args=None, check_mode=False, run=None,
                 timeout=120, client=None, environ=None, names=None):
        if run is None:
            raise ValueError("CalicoctlDatastore needs a command runner")
        self.path = path or "calicoctl"
        self.config = config
        self.extra_args = list(extra_args or [])
        self.check_mode = check_mode
        self.run = run
        self.timeout = timeout
        self.client = client
        self.environ = os.environ if environ is None else environ
        self.names = names or {"datastore": "datastore", "config": "calicoctl_config"}
        self.settings = None
        self.requests = {"read": 0, "write": 0}

    def resolve(self):
        if self.settings is None:
            try:
                self.settings = etcd_settings(self.config, self.environ, self.names)
            except CalicoctlConfigError as exc:
                raise DatastoreError("%s; nothing was written" % exc)
            self._check_reaches_etcd()
        return self.api_version

    def _cluster_guid(self):
        """The clusterGUID of ClusterInformation ``default`` as calicoctl reads it (None when it has none)."""
        found = self._get_one(["get", "clusterinformation", "default", "-o", "json"])
        return ((found or {}).get("spec") or {}).get("clusterGUID")

    def _check_reaches_etcd(self):
        if self.client is None:
            return
        try:
            kdd = self.client.get(*KDD_CLUSTER_INFORMATION)
        except ClientError:
            return  # the comparison needs the Kubernetes datastore's copy; without it the settings' check stands
        kdd_guid = ((kdd or {}).get("spec") or {}).get("clusterGUID")
        if not kdd_guid:
            return
        guid = self._cluster_guid()
        if guid == kdd_guid:
            raise DatastoreError(
                "%s is etcd but calicoctl (%s) reaches the Kubernetes datastore: the ClusterInformation it reads "
                "(clusterGUID %s) is the one the Kubernetes API holds; fix %s or %s (a configuration with "
                "datastoreType etcdv3); nothing was written"
                % (self.names["datastore"], self.path, guid, self.names["config"],
                   self.names.get("path", "calicoctl_path")))

    def describe(self):
        out = {"datastore": self.datastore, "api_version": self.api_version, "calicoctl": self.path,
               "calicoctl_config": self.config}
        if self.settings:
            out["calicoctl_settings"] = self.settings["source"]
        return out

    def _call(self, args, data=None, write=False):
        if write and self.check_mode:
            raise ReadOnlyViolation("check mode: refusing calicoctl %s" % " ".join(args))
        argv = [self.path] + list(args)
        if self.config:
            argv.append("--config=%s" % self.config)
        argv.extend(self.extra_args)
        self.requests["write" if write else "read"] += 1
        try:
            return self.run(argv, data, self.timeout, etcd_environment())
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

    def _get_one(self, args):
        """One object as ``calicoctl get ... -o json`` prints it, or None when calicoctl says it does not exist."""
        rc, out, err = self._call(args)
        if rc != 0:
            if _not_found(err + out):
                return None
            raise self._fail(args, rc, out, err)
        try:
            return json.loads(out)
        except ValueError:
            raise DatastoreError("calicoctl %s: the output is not JSON: %s" % (" ".join(args), out[:200]))

    def get_kcc(self):
        return self._get_one(["get", rules.KCC_PLURAL, rules.KCC_NAME, "-o", "json"])

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


def make_datastore(client, params, run=None):
    """The datastore of ``params`` (the module's options); ``run``: the command runner calicoctl needs (etcd)."""
    if params.get("datastore") == "etcd":
        prefix = params.get("variable_prefix") or ""
        return CalicoctlDatastore(path=params.get("calicoctl_path"), config=params.get("calicoctl_config"),
                                  extra_args=params.get("calicoctl_extra_args"),
                                  check_mode=bool(getattr(client, "check_mode", False)),
                                  timeout=params.get("calicoctl_timeout") or 120, run=run, client=client,
                                  names={"datastore": prefix + "datastore", "config": prefix + "calicoctl_config",
                                         "path": prefix + "calicoctl_path"})
    return KubeDatastore(client, api_version=params.get("api_version") or "auto",
                         page_size=params.get("page_size") or 500)
