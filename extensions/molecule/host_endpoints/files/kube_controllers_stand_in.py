# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""calico-kube-controllers' automatic host endpoints, played for the Molecule scenario host_endpoints.

No calico-kube-controllers runs on the local control plane. While KubeControllersConfiguration ``default``
says ``spec.controllers.node.hostEndpoint.autoCreate: Enabled``, this process gives each node named on the
command line a ``<node>-auto-hep`` HostEndpoint (all interfaces, the node's labels plus
``projectcalico.org/created-by: calico-kube-controllers``) and keeps its labels in step with the node's, as the
real controller does. It stops when the stop file exists or after --max-seconds.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import json
import os
import sys
import time

from kubernetes import config, dynamic
from kubernetes.dynamic.exceptions import NotFoundError

CREATED_BY = {"projectcalico.org/created-by": "calico-kube-controllers"}
AGENT = "calico-kube-controllers-stand-in"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--api-version", default="crd.projectcalico.org/v1")
    parser.add_argument("--nodes", required=True, help="comma-separated node names")
    parser.add_argument("--stop-file", required=True)
    parser.add_argument("--max-seconds", type=float, default=900)
    parser.add_argument("--interval", type=float, default=0.5)
    args = parser.parse_args()

    api = config.new_client_from_config(config_file=args.kubeconfig)
    api.user_agent = AGENT
    dyn = dynamic.DynamicClient(api)
    heps = "/apis/%s/hostendpoints" % args.api_version
    kcc = "/apis/%s/kubecontrollersconfigurations/default" % args.api_version
    nodes = set(n for n in args.nodes.split(",") if n)

    def req(method, path, body=None, ctype="application/json", query=None):
        resp = dyn.request(method, path, body=body, serialize=False, content_type=ctype,
                           header_params={"Accept": "application/json"}, query_params=list((query or {}).items()))
        return json.loads(resp.data) if resp.data else None

    def step():
        try:
            conf = req("GET", kcc)
        except NotFoundError:
            return
        hep = ((((conf.get("spec") or {}).get("controllers") or {}).get("node") or {}).get("hostEndpoint") or {})
        if hep.get("autoCreate") != "Enabled":
            return
        present = dict((n["metadata"]["name"], n) for n in req("GET", "/api/v1/nodes")["items"]
                       if n["metadata"]["name"] in nodes)
        autos = dict((h["metadata"]["name"], h) for h in req(
            "GET", heps, query={"labelSelector": "projectcalico.org/created-by=calico-kube-controllers"})["items"])
        for name in sorted(present):
            labels = dict(present[name]["metadata"].get("labels") or {})
            labels.update(CREATED_BY)
            current = autos.get(name + "-auto-hep")
            if current is None:
                req("POST", heps, {"apiVersion": args.api_version, "kind": "HostEndpoint",
                                   "metadata": {"name": name + "-auto-hep", "labels": labels},
                                   "spec": {"node": name, "interfaceName": "*", "expectedIPs": ["10.0.0.1"],
                                            "profiles": ["projectcalico-default-allow"]}})
            elif current["metadata"].get("labels") != labels:
                patch = dict((k, None) for k in current["metadata"]["labels"] if k not in labels)
                patch.update(labels)
                req("PATCH", heps + "/" + name + "-auto-hep", {"metadata": {"labels": patch}},
                    ctype="application/merge-patch+json")

    deadline = time.monotonic() + args.max_seconds
    while time.monotonic() < deadline and not os.path.exists(args.stop_file):
        try:
            step()
        except Exception as exc:  # keep playing: a transient API error must not end the stand-in
            sys.stderr.write("stand-in: %r\n" % (exc,))
        time.sleep(args.interval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
