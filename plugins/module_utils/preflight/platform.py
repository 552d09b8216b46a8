# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: the platform a role acts for - the user's choice, else the preflight's detection.

There is one platform detector in this collection, the preflight's (``cluster_rules.detect_platform`` over
``node_facts`` and the served API groups, ``preflight.served_group_versions``); this file only calls it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight import rules as preflight_rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight import cluster_rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight import node_rules
from ansible_collections.calico_ops.lifecycle.plugins.module_utils.k8s.discovery import served_group_versions


def choose_platform(client, platform="auto", group_versions=None, page_size=500):
    """``{name, source, title, details}``: ``platform`` when it is not ``auto`` (source ``user``), otherwise
    what the preflight detects from the Nodes and the served API groups (source ``detected``).

    ``group_versions`` may be passed when already read (one GET of /apis saved).
    """
    if platform and platform != "auto":
        return {"name": platform, "source": "user", "title": preflight_rules.PLATFORM_TITLES.get(platform, platform),
                "details": None}
    if group_versions is None:
        group_versions = served_group_versions(client)
    all_facts = [node_rules.node_facts(n) for n in client.list("v1", "nodes", page_size=page_size)]
    detection = cluster_rules.detect_platform(all_facts, group_versions)
    details = cluster_rules.platform_details(detection["name"], all_facts, source="detected",
                                             detection=detection)
    return {"name": detection["name"], "source": "detected",
            "title": preflight_rules.PLATFORM_TITLES.get(detection["name"], detection["name"]),
            "details": details}
