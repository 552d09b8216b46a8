# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""calicoctl pointed at the datastore a job was told, explicitly.

calicoctl (v3.x, ``calicoctl/commands/clientmgr`` and libcalico-go ``apiconfig/load.go``) reads its configuration
from ``--config`` (default ``/etc/calico/calicoctl.cfg``, used only when that file exists), else from the environment
(``CALICO_<NAME>`` first, then ``<NAME>``: ``DATASTORE_TYPE``, ``ETCD_ENDPOINTS``, ...). A configuration with no
datastore type becomes ``etcdv3`` when it names etcd endpoints and ``kubernetes`` when it does not - so a calicoctl
with no etcd settings quietly works on the Kubernetes datastore. A job told to work on etcd must never do that:

* ``etcd_settings`` reads what calicoctl will use by the same rules and refuses (naming the variable to fix) a
  configuration file that is missing, unreadable, of the wrong kind, or of the Kubernetes datastore, and an
  environment with no etcd endpoint;
* ``etcd_environment`` is the environment every calicoctl call of such a job runs with: ``DATASTORE_TYPE`` (and its
  ``CALICO_`` form) set to ``etcdv3``, so that an environment without endpoints fails instead of falling back.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

try:
    import yaml
except ImportError:  # the modules that use this need PyYAML (the kubernetes client requires it)
    yaml = None

DEFAULT_CONFIG = "/etc/calico/calicoctl.cfg"
ETCD = "etcdv3"
KUBERNETES = "kubernetes"
API_VERSION = "projectcalico.org/v3"
KIND = "CalicoAPIConfig"


class CalicoctlConfigError(Exception):
    """calicoctl would not reach the datastore the job was told; the message names the variable to fix."""


def _env(environ, name):
    """envconfig's lookup with prefix ``calico``: ``CALICO_<NAME>`` first, then ``<NAME>``."""
    return environ.get("CALICO_" + name) or environ.get(name) or ""


def datastore_of(spec):
    """The datastore type calicoctl derives from a configuration's spec (``applyConfigDefaults``)."""
    kind = (spec or {}).get("datastoreType") or ""
    if kind:
        return kind
    return ETCD if (spec or {}).get("etcdEndpoints") else KUBERNETES


def read_config(path, config_var):
    """The spec of calicoctl's configuration file ``path``; CalicoctlConfigError when it cannot be used."""
    try:
        with open(path, "r") as handle:
            doc = yaml.safe_load(handle.read()) if yaml else None
    except (IOError, OSError) as exc:
        raise CalicoctlConfigError("%s: calicoctl's configuration %s cannot be read (%s)"
                                   % (config_var, path, exc.strerror or type(exc).__name__))
    except yaml.YAMLError:
        raise CalicoctlConfigError("%s: calicoctl's configuration %s is not valid YAML" % (config_var, path))
    if not isinstance(doc, dict) or doc.get("apiVersion") != API_VERSION or doc.get("kind") != KIND:
        raise CalicoctlConfigError("%s: %s is not a calicoctl configuration (apiVersion %s, kind %s)"
                                   % (config_var, path, API_VERSION, KIND))
    spec = doc.get("spec")
    return spec if isinstance(spec, dict) else {}


def etcd_settings(config, environ, names, default_config=None):
    """Where a calicoctl run for the etcd datastore takes its settings: ``{"source": "file" | "environment",
    "config": path or None, "endpoints": "..."}``. ``config``: the job's configuration file (None: calicoctl's
    default, when it exists, else the environment); ``names``: ``{"datastore": ..., "config": ...}``, the variables
    a failure names; ``default_config``: calicoctl's default file (None: DEFAULT_CONFIG, "": none). Raises
    CalicoctlConfigError when calicoctl would not reach an etcd datastore."""
    default_config = DEFAULT_CONFIG if default_config is None else default_config
    path = config or (default_config if default_config and os.path.exists(default_config) else None)
    if path:
        spec = read_config(path, names["config"])
        kind = datastore_of(spec)
        if kind != ETCD:
            raise CalicoctlConfigError(
                "%s is etcd but calicoctl's configuration %s is of the %s datastore (datastoreType %s): calicoctl would "
                "read and write that datastore; give %s a configuration with datastoreType etcdv3 and etcdEndpoints"
                % (names["datastore"], path, kind, spec.get("datastoreType") or "unset, no etcdEndpoints",
                   names["config"]))
        if not (spec.get("etcdEndpoints") or spec.get("etcdDiscoverySrv")):
            raise CalicoctlConfigError("%s: calicoctl's configuration %s names no etcd endpoint (etcdEndpoints)"
                                       % (names["config"], path))
        return {"source": "file", "config": path, "endpoints": spec.get("etcdEndpoints") or ""}
    endpoints = _env(environ, "ETCD_ENDPOINTS") or _env(environ, "ETCD_DISCOVERY_SRV")
    if not endpoints:
        raise CalicoctlConfigError(
            "%s is etcd but calicoctl has no etcd settings: no %s, no %s, and no ETCD_ENDPOINTS in the environment - "
            "it would fall back to the Kubernetes datastore; set %s to a calicoctl configuration with datastoreType "
            "etcdv3 and etcdEndpoints" % (names["datastore"], names["config"], default_config, names["config"]))
    return {"source": "environment", "config": None, "endpoints": endpoints}


def etcd_environment():
    """The environment every calicoctl call of an etcd job adds: the datastore, explicitly."""
    return {"DATASTORE_TYPE": ETCD, "CALICO_DATASTORE_TYPE": ETCD}
