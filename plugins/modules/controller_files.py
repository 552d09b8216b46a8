#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: controller_files
short_description: Write several text files on the controller in one task (reports, artifacts)
version_added: "0.2.0"
description:
  - >-
    Writes each entry of O(files) on the Ansible controller, in the controller's own process (an action plugin - no
    module is sent to any host). It replaces a C(file) task for the directory and a C(copy) task per file (two
    module runs a file) where a role keeps downloaded manifests or writes its reports.
  - A file is written only when its content differs from what is on disk (its mode set when only the mode
    differs), atomically (a temporary file in the same directory, then a rename), with O(files[].mode) whatever
    the umask; a missing directory is created with O(directory_mode).
  - Do not write secrets with it; the roles write only public release files and reports.
author:
  - calico_ops maintainers (@calico-ops)
options:
  files:
    description: The files to write.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description: The file's path on the controller.
        type: path
        required: true
      content:
        description: The file's text.
        type: str
        required: true
      mode:
        description: The file's mode, an octal string.
        type: raw
        default: "0600"
  directory_mode:
    description: The mode of a directory created for a file.
    type: raw
    default: "0700"
attributes:
  action:
    support: full
    description: Runs entirely in the action plugin on the controller.
  check_mode:
    support: full
    description: Reports which files would change and writes nothing (unless the task sets C(check_mode=false)).
  diff_mode:
    support: full
    description: Shows each changed file; a file over 100 KB is shown by its size only.
  platform:
    support: full
    platforms: posix
    description: The files are written on the controller, whatever host the task runs for.
seealso:
  - module: ansible.builtin.copy
"""

EXAMPLES = r"""
- name: Write the JSON and Markdown reports on the controller
  calico_ops.lifecycle.controller_files:
    files:
      - path: ./preflight-reports/preflight.json
        content: "{{ report | to_nice_json }}"
      - path: ./preflight-reports/preflight.md
        content: "{{ report_markdown }}"
"""

RETURN = r"""
files:
  description: One entry per file - C(path) (absolute), C(changed), C(size) (bytes).
  returned: always
  type: list
  elements: dict
  sample:
    - path: /home/user/preflight-reports/preflight.json
      changed: true
      size: 2048
"""
