#!/usr/bin/env bash
# The kubectl bulk contender of `make bench`, job owner_references: what a skilled operator would script with kubectl
# alone around an upgrade whose owners get new UIDs. One process per step, one request per object.
#   detach: one LIST of the ConfigMaps (kept as the record, a local file), the Calico owner references removed with
#           jq, one `kubectl replace -f -` of the changed ones (a PUT each, guarded by its resourceVersion);
#   attach: the ConfigMaps, the NetworkPolicies and GlobalNetworkPolicies listed once each, the recorded references
#           put back with the owners' new UIDs (jq), one `kubectl replace -f -`.
# Usage: owner_references.sh detach|attach RECORD_FILE WORK_DIR (KUBECONFIG and PATH name the cluster and kubectl)
set -euo pipefail
phase=$1 record=$2 work=$3
calico=projectcalico.org/v3
case $phase in
  detach)
    kubectl get configmaps -A -o json > "$record"
    jq --arg g "$calico" '{apiVersion: "v1", kind: "List", items: [.items[]
        | select(any(.metadata.ownerReferences[]?; .apiVersion == $g))
        | .metadata.ownerReferences |= map(select(.apiVersion != $g))]}' "$record" > "$work/detach.json"
    kubectl replace -f "$work/detach.json" -o name | wc -l
    ;;
  attach)
    kubectl get configmaps -A -o json > "$work/current.json"
    kubectl get networkpolicies.projectcalico.org -A -o json > "$work/np.json"
    kubectl get globalnetworkpolicies.projectcalico.org -o json > "$work/gnp.json"
    jq -n --arg g "$calico" --slurpfile rec "$record" --slurpfile cur "$work/current.json" \
        --slurpfile np "$work/np.json" --slurpfile gnp "$work/gnp.json" '
      ($np[0].items | map({key: (.metadata.namespace + "/" + .metadata.name), value: .metadata.uid}) | from_entries)
        as $npu
      | ($gnp[0].items | map({key: .metadata.name, value: .metadata.uid}) | from_entries) as $gnpu
      | ($rec[0].items | map(select(any(.metadata.ownerReferences[]?; .apiVersion == $g)))
         | map({key: .metadata.uid, value: .metadata.ownerReferences}) | from_entries) as $refs
      | {apiVersion: "v1", kind: "List", items: [$cur[0].items[] | select($refs[.metadata.uid]) | . as $o
          | .metadata.ownerReferences = [$refs[$o.metadata.uid][]
              | if .apiVersion == $g then .uid = (if .kind == "GlobalNetworkPolicy" then $gnpu[.name]
                                                  else $npu[$o.metadata.namespace + "/" + .name] end)
                else . end]]}' > "$work/attach.json"
    kubectl replace -f "$work/attach.json" -o name | wc -l
    ;;
  *) echo "usage: $0 detach|attach RECORD_FILE WORK_DIR" >&2; exit 2 ;;
esac
