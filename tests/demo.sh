#!/usr/bin/env bash
# `make demo`: the main job on the embedded default. Starts a kubeadm-shaped local control plane (kube-proxy
# DaemonSet and ConfigMap as kubeadm creates them) whose nodes have a network (each a network namespace of its own,
# tests/localcp/dataplane.py), runs the eBPF install (preflight included) against it with the real Tigera operator
# running behind its Deployment and the real calico-node and Typha behind theirs, prints what the cluster reports,
# then sends requests through the eBPF data plane (pod to pod across nodes, ClusterIP, NodePort) and tears it down.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=$ROOT/.venv/bin
export PATH="$BIN:$PATH" PYTHONPATH="$ROOT/tests" ANSIBLE_COLLECTIONS_PATH="$ROOT/.build/collections"

echo "==> starting a kubeadm-shaped local control plane (etcd, kube-apiserver, controller-manager, scheduler, kwok,"
echo "    and the pod runner that runs the real Tigera operator, calico-kube-controllers, calico-apiserver, calico-node"
echo "    and calico-typha), with 3 nodes that each have a network namespace, a bpffs and an address of their own"
envs=$("$BIN/python" -m localcp up --dataplane --builds demo) || { echo "error: the local control plane did not start"; exit 1; }
eval "$envs"
trap 'echo "==> stopping the local control plane"; "$BIN/python" -m localcp down --dir "$LOCALCP_RUN_DIR"' EXIT

echo "==> kube-apiserver $(kubectl version -o json | "$BIN/python" -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])') at $(kubectl config view -o jsonpath='{.clusters[0].cluster.server}')"
echo "==> nodes (kwok keeps their status; each has a network namespace, its InternalIP is the address there) and kube-proxy as kubeadm left it"
kubectl get nodes -o wide
kubectl get daemonset kube-proxy -n kube-system
rc=0
echo "==> ansible-playbook calico_ops.lifecycle.install_ebpf (open-source variant, eBPF, release files from $CALICO_OPS_MIRROR_URL)"
ansible-playbook -i inventories/local/hosts.yml playbooks/install_ebpf.yml \
  -e ebpf_install_artifacts_dir="$ROOT/.build/demo" || rc=$?
echo "==> artifacts (downloaded files, edited custom-resources, preflight report): $ROOT/.build/demo"
echo "==> what the cluster reports now"
echo "--- ConfigMap tigera-operator/kubernetes-services-endpoint"
kubectl get configmap kubernetes-services-endpoint -n tigera-operator -o jsonpath='{.data}{"\n"}'
echo "--- TigeraStatus (reported by the real operator)"
kubectl get tigerastatus
echo "--- Installation default and FelixConfiguration default"
kubectl get installation default -o jsonpath='{"linuxDataplane="}{.spec.calicoNetwork.linuxDataplane}{", variant="}{.status.variant}{", calicoVersion="}{.status.calicoVersion}{"\n"}'
kubectl get felixconfiguration default -o jsonpath='{"bpfEnabled="}{.spec.bpfEnabled}{"\n"}'
echo "--- calico-node as the operator rendered it (API server endpoint given to calico-node)"
kubectl get daemonset calico-node -n calico-system \
  -o jsonpath='{range .spec.template.spec.containers[?(@.name=="calico-node")].env[?(@.name=="KUBERNETES_SERVICE_HOST")]}{.name}={.value}{"\n"}{end}{range .spec.template.spec.containers[?(@.name=="calico-node")].env[?(@.name=="KUBERNETES_SERVICE_PORT")]}{.name}={.value}{"\n"}{end}'
kubectl get daemonset,deployment -n calico-system
echo "--- kube-proxy (kept off the nodes)"
kubectl get daemonset kube-proxy -n kube-system -o wide
echo "--- real processes behind the pods (goldmane, whisker and csi-node-driver stay kwok pods: not built here)"
"$BIN/python" - "$LOCALCP_RUN_DIR" <<'PY'
import json, sys
for p in json.load(open(sys.argv[1] + "/pods/processes.json")):
    print(f"{p['component']:<24} {p['version']:<9} {p['namespace']}/{p['pod']:<45} {p['where']:<5} pid {p['pid']} restarts {p['restarts']} {p['problem']}")
PY
[ $rc -eq 0 ] || exit $rc
echo "==> traffic through the eBPF data plane"
"$BIN/python" -m localcp.traffic --run-dir "$LOCALCP_RUN_DIR" || rc=$?
exit $rc
