# -*- coding: utf-8 -*-
# Copyright: calico_ops contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One job: collect what Calico support asks for into one archive (``rules.py`` what and how, ``runner.py`` the
reads and the file)."""
