"""Benchmark: ebpf_preflight_info on a cluster of N nodes, in one call (not a timed test).

Creates N kwok nodes (a mix: Ubuntu 22.04, RHEL 8.1 with kernel 4.18.0-147, arm64, s390x), runs the module
once through ansible-playbook, and records the wall time and the API requests it caused (audit log, user
``admin``: total, per resource and verb, and writes, which must be 0). The number of requests should not grow
with N except for pagination of the node LIST (``page_size``, 500 by default). Every run is checked: every
node judged, the shaped nodes with the expected verdict.

    PYTHONPATH=tests .venv/bin/python benchmarks/preflight.py [--nodes 2000] [--page-size 500]

Uses the control plane of LOCALCP_RUN_DIR when set (and removes its nodes afterwards), else starts one
(and stops it at the end). Results are printed and written to benchmarks/work/preflight-<N>.json.
"""

import argparse
import collections
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

from localcp.cluster import ControlPlane  # noqa: E402
from localcp.fixtures import Ansible, Cluster, collections_path  # noqa: E402

PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: preflight
      calico_ops.lifecycle.ebpf_preflight_info:
        page_size: "{{ page_size }}"
      register: preflight
"""

SHAPES = [
    ("ubuntu", {}, "ok"),
    ("rhel81", {"osImage": "Red Hat Enterprise Linux 8.1 (Ootpa)", "kernelVersion": "4.18.0-147.el8.x86_64"},
     "fail"),
    ("arm64", {"architecture": "arm64"}, "ok"),
    ("s390x", {"architecture": "s390x"}, "fail"),
]


def specs(cluster, n, tag):
    out, expected = [], {}
    for i in range(n):
        shape, info, verdict = SHAPES[0] if i % 10 else SHAPES[(i // 10) % len(SHAPES)]
        name = "bench-%s-%s-%05d" % (tag, shape, i)
        out.append(cluster.node_spec(name, **info))
        expected[name] = verdict
    return out, expected


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--page-size", type=int, default=500)
    args = parser.parse_args(argv)
    os.environ.setdefault("ANSIBLE_COLLECTIONS_PATH", collections_path())

    run_dir = os.environ.get("LOCALCP_RUN_DIR")
    own = not (run_dir and Path(run_dir, "state.json").exists())
    cp = ControlPlane(die_with_parent=True).start() if own else ControlPlane.load(Path(run_dir))
    cluster = Cluster(cp)
    tag = uuid.uuid4().hex[:4]
    node_specs, expected = specs(cluster, args.nodes, tag)
    workdir = Path(tempfile.mkdtemp(prefix="bench-preflight-"))
    try:
        start = time.monotonic()
        cluster.add_nodes(node_specs, timeout=1800)
        setup_s = time.monotonic() - start

        mark = cluster.audit.mark()
        start = time.monotonic()
        res = Ansible(cluster, workdir).playbook(PLAY, extra_vars={"page_size": args.page_size}, timeout=3600)
        wall = time.monotonic() - start
        if res.rc != 0:
            raise RuntimeError("preflight failed:\n%s\n%s" % (res.stdout[-5000:], res.stderr[-3000:]))
        result = res.result_of("preflight")
        events = cluster.audit.events_since(mark)

        judged = result["nodes"]
        missing = [n for n in expected if n not in judged]
        wrong = [n for n, v in expected.items() if n in judged and judged[n]["verdict"] != v]
        assert not missing and not wrong, (missing[:5], wrong[:5])
        by = collections.Counter("%s %s" % (e.get("verb"), (e.get("objectRef") or {}).get("resource")
                                            or e.get("requestURI", "").split("?")[0]) for e in events)
        writes = [e for e in events if e.get("verb") in ("create", "update", "patch", "delete", "deletecollection")]
        out = {
            "nodes_created": args.nodes,
            "nodes_judged": len(judged),
            "page_size": args.page_size,
            "setup_s": round(setup_s, 1),
            "preflight_wall_s": round(wall, 2),
            "api_requests_audit": len(events),
            "api_requests_by_module": result["api_requests"],
            "node_list_requests": by.get("list nodes", 0),
            "requests_by_verb_and_resource": dict(sorted(by.items())),
            "writes": len(writes),
            "summary": {k: result["summary"][k] for k in ("verdict", "eligible", "nodes")},
        }
        assert out["writes"] == 0, writes[:5]
        print(json.dumps(out, indent=2))
        dest = HERE / "work" / ("preflight-%d.json" % args.nodes)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(json.dumps(out, indent=2) + "\n")
        print("written to %s" % dest)
    finally:
        if own:
            cp.stop(remove_dir=True)
        else:
            cluster.remove_nodes([s["metadata"]["name"] for s in node_specs])
    return 0


if __name__ == "__main__":
    sys.exit(main())
