"""What the benchmark scripts share: the control plane they run on."""

import os
from pathlib import Path

from localcp.cluster import ControlPlane


def control_plane():
    """(control plane, the one to stop at the end or None): LOCALCP_RUN_DIR's when it runs, else a new one."""
    run_dir = os.environ.get("LOCALCP_RUN_DIR")
    if run_dir and Path(run_dir, "state.json").exists():
        return ControlPlane.load(Path(run_dir)), None
    cp = ControlPlane(die_with_parent=True).start()
    return cp, cp
