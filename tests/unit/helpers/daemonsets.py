"""A kube-proxy DaemonSet and its pods as the API returns them, for the DaemonSet rules (k8s/daemonset.py) and
kube-proxy's (kube_proxy/rules.py)."""


def daemonset(node_selector=None, generation=1, observed=1, containers=None, **status):
    """DaemonSet kube-system/kube-proxy, 3 pods desired and ready unless ``status`` says otherwise."""
    st = {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "updatedNumberScheduled": 3,
          "numberReady": 3, "numberAvailable": 3, "observedGeneration": observed}
    st.update(status)
    spec = {"selector": {"matchLabels": {"k8s-app": "kube-proxy", "tier": "node"}},
            "template": {"spec": {"containers": containers or [{"name": "kube-proxy", "command": ["kube-proxy"]}]}}}
    if node_selector is not None:
        spec["template"]["spec"]["nodeSelector"] = dict(node_selector)
    return {"metadata": {"name": "kube-proxy", "namespace": "kube-system", "generation": generation},
            "spec": spec, "status": st}


def pods(n, deleting=0):
    """``n`` pods, the first ``deleting`` of them being deleted."""
    out = [{"metadata": {"name": "kp-%d" % i}} for i in range(n)]
    for p in out[:deleting]:
        p["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    return out
