# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Molecule: play calico-node's start-up report, which nothing runs here, for the manifest upgrade scenario.

The scenarios' control planes have no node network (the real calico-node runs only where nodes have one:
tests/localcp/dataplane.py), and they install v3.27.5, whose calico-node is not built; kwok runs its pods (Running,
ready) but executes nothing in them.
The stand-in of the integration tests (tests/integration/calico_support.py) writes what calico-node writes at
start-up and the upgrade role reads: ClusterInformation ``default`` ``spec.calicoVersion`` (the image tag of the
running calico-node; Kubernetes API datastore). The Tigera operator is not played: the harness runs the real one.

Started by a scenario's prepare.yml (async, poll 0); it stops when the stop file exists (cleanup.yml writes
it) or after --max-seconds, whichever comes first.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "tests", "integration"))

from calico_support import CalicoNodeStandIn  # noqa: E402 pylint: disable=wrong-import-position


class Cluster(object):
    """What the stand-ins use of the test fixtures' cluster: a dynamic client and the release mirror."""

    def __init__(self, kubeconfig, mirror_url):
        from kubernetes import config, dynamic
        self.k8s = dynamic.DynamicClient(config.new_client_from_config(config_file=kubeconfig))
        self.mirror_url = mirror_url


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--mirror-url", required=True)
    parser.add_argument("--stop-file", required=True)
    parser.add_argument("--max-seconds", type=int, default=1800)
    parser.add_argument("--node-daemonset", default="calico-node")
    args = parser.parse_args()
    cluster = Cluster(args.kubeconfig, args.mirror_url)
    players = [CalicoNodeStandIn(cluster, daemonset=args.node_daemonset)]
    for player in players:
        player.start()
    deadline = time.monotonic() + args.max_seconds
    try:
        while not os.path.exists(args.stop_file) and time.monotonic() < deadline:
            time.sleep(1)
    finally:
        for player in players:
            player.stop()
    errors = [e for p in players for e in p.errors]
    print("writes: %d; errors: %d %s" % (sum(p.writes for p in players), len(errors), errors[-3:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
