"""A projectcalico.org/v3 object as the datastore migration reads it (name, uid, resourceVersion, spec)."""


def obj(kind, name, spec=None, namespace=None, labels=None):
    meta = {"name": name, "uid": "u-" + name, "resourceVersion": "7"}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "projectcalico.org/v3", "kind": kind, "metadata": meta, "spec": spec or {}}
