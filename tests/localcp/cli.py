"""``python -m localcp`` (with ``PYTHONPATH=tests``): build | up | down | env | status.

    up      start a control plane in the background and print its environment (as shell exports)
    down    stop it and remove its run directory (default: the last one started)
    env     print the environment of the running one (eval "$(python -m localcp env)")
    status  say whether it runs
    build   build or find every binary (``--no-calico``: the control plane's only)
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from . import build, releases
from .cluster import ControlPlane, StartError, current_pointer, log
from .nodes import default_specs


def _current(run_dir) -> ControlPlane | None:
    if run_dir:
        path = Path(run_dir)
    else:
        ptr = current_pointer()
        if not ptr.exists():
            return None
        path = Path(ptr.read_text().strip())
    if not (path / "state.json").exists():
        return None
    return ControlPlane.load(path)


def _print_env(cp: ControlPlane) -> None:
    env = cp.env()
    env["LOCALCP_RUN_DIR"] = str(cp.run_dir)
    for k, v in env.items():
        print(f"export {k}={shlex.quote(v)}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="localcp", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_up = sub.add_parser("up")
    p_up.add_argument("--nodes", type=int, default=3, help="Ubuntu 22.04 kwok nodes to create (default 3)")
    p_up.add_argument("--dir", help="run directory (default: a new temporary one)")
    p_up.add_argument("--timeout", type=float, default=120, help="per-component health timeout (s)")
    p_up.add_argument("--shape", default="none", choices=["none", "kubeadm"],
                      help="kubeadm: the kube-proxy addon, kubeadm-config and a node-network API endpoint")
    p_up.add_argument("--dataplane", action="store_true",
                      help="nodes with a network (implies --shape kubeadm): the real calico-node and Typha run "
                           "behind their pods in each node's namespaces (localcp/dataplane.py)")
    p_up.add_argument("--builds", choices=["all", "demo"], default="all",
                      help="demo: build only what the demo runs")
    for name in ("down", "env", "status"):
        p = sub.add_parser(name)
        p.add_argument("--dir", help="run directory (default: the last one started)")
    p_build = sub.add_parser("build")
    p_build.add_argument("--no-calico", action="store_true")
    p_build.add_argument("--only", choices=["all", "demo"], default="all")
    args = parser.parse_args(argv)

    if args.cmd == "build":
        return releases.main((["--no-calico"] if args.no_calico else []) + ["--only", args.only])

    if args.cmd == "up":
        # several control planes may run at once (free ports, own run dirs); `down` without --dir stops
        # the most recent one
        cp = ControlPlane(args.dir, die_with_parent=False)
        try:
            cp.start(default_specs(args.nodes), timeout=args.timeout,
                     shape="kubeadm" if args.dataplane else args.shape, with_dataplane=args.dataplane,
                     builds=args.builds)
        except (StartError, build.BuildError, TimeoutError, RuntimeError) as exc:
            log(f"up failed: {exc}")
            return 1
        if args.dir is None:
            # `make cluster-up` (no --dir) becomes the one `make cluster-env/down` find; a control plane with
            # a run dir of its own (tests, Molecule, several at once) leaves that pointer alone
            current_pointer().parent.mkdir(parents=True, exist_ok=True)
            current_pointer().write_text(str(cp.run_dir))
        _print_env(cp)
        return 0

    cp = _current(args.dir)
    if cp is None:
        log("no control plane is running")
        return 0 if args.cmd == "down" else 1
    if args.cmd == "env":
        _print_env(cp)
    elif args.cmd == "status":
        print(f"running: {cp.state.get('server')} run dir {cp.run_dir} pids {cp.state.get('pids')}")
    elif args.cmd == "down":
        cp.stop(remove_dir=True)
        ptr = current_pointer()
        if ptr.exists() and ptr.read_text().strip() == str(cp.run_dir):
            ptr.unlink()
        log(f"stopped and removed {cp.run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
