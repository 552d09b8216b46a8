#!/usr/bin/env bash
# The kubectl bulk contender of `make bench`, job upgrade: Calico's "Upgrade Calico on Kubernetes" for an install
# from the manifest with the Kubernetes API datastore, scripted with kubectl alone, one process per step.
#   the target release's calico.yaml downloaded and applied server-side with forced conflicts (a rolling update);
#   `kubectl rollout status` of calico-node; the cluster version read back (what `calicoctl version` reads:
#   ClusterInformation default) until it is the target's.
# Prints "wait_s <seconds>" (the rollout and the cluster-version wait, which the benchmark subtracts, as it does
# ours' tasks named "wait").
# Usage: upgrade.sh MANIFEST_URL TARGET_VERSION WORK_DIR (KUBECONFIG and PATH name the cluster and kubectl)
set -euo pipefail
url=$1 target=$2 work=$3
cd "$work"
curl -fsS -o calico.yaml "$url"
kubectl apply --server-side --force-conflicts -f calico.yaml >/dev/null
start=$(date +%s.%N)
kubectl rollout status daemonset/calico-node -n kube-system --timeout=300s >/dev/null
for _ in $(seq 300); do
  version=$(kubectl get clusterinformations.crd.projectcalico.org default -o jsonpath='{.spec.calicoVersion}')
  [ "$version" = "$target" ] && break
  sleep 1
done
end=$(date +%s.%N)
[ "$version" = "$target" ] || { echo "cluster version $version, not $target, after 300 s" >&2; exit 1; }
awk -v a="$start" -v b="$end" 'BEGIN { printf "wait_s %.3f\n", b - a }'
