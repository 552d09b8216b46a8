# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the preflight role: merge the API and host results, render the report (no logic in Jinja)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.calico_ops.lifecycle.plugins.module_utils.preflight import report as preflight_report


def preflight_report_filter(cluster, host_results=None, ignore=None):
    return preflight_report.merge(cluster, host_results, ignore)


def preflight_markdown(report):
    return preflight_report.to_markdown(report)


def preflight_table(report, width=100):
    return preflight_report.table_lines(report, width)


class FilterModule(object):
    def filters(self):
        return {
            "preflight_report": preflight_report_filter,
            "preflight_markdown": preflight_markdown,
            "preflight_table": preflight_table,
        }
