"""A Node object as the API server returns it (``status.nodeInfo`` as the kubelet reports it), for the platform
detection and the preflight's rules."""


def node(name="n1", os_image="Ubuntu 22.04.4 LTS", kernel="5.15.0-105-generic", arch="amd64",
         operating_system="linux", labels=None, annotations=None, provider_id=None, kubelet="v1.33.13",
         node_info=True):
    obj = {"metadata": {"name": name, "labels": dict(labels or {}), "annotations": dict(annotations or {})},
           "spec": {}, "status": {}}
    if node_info:
        obj["status"]["nodeInfo"] = {"osImage": os_image, "kernelVersion": kernel, "architecture": arch,
                                     "operatingSystem": operating_system, "kubeletVersion": kubelet}
    if provider_id:
        obj["spec"]["providerID"] = provider_id
    return obj
