# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the services_endpoint role: its report, made in Python (module_utils/services_endpoint/report.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.services_endpoint import report as endpoint_report


def services_endpoint_report(steps):
    """The role's published result and its report's lines (module_utils/services_endpoint/report.report)."""
    return endpoint_report.report(steps)


class FilterModule(object):
    def filters(self):
        return {"services_endpoint_report": services_endpoint_report}
