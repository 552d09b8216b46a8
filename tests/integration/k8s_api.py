"""Raw JSON requests through a kubernetes client of the test's own (independent of the code under test)."""

import json
import time

from kubernetes import config as k8s_config
from kubernetes import dynamic
from kubernetes.dynamic.exceptions import NotFoundError


class Api(object):
    """``user_agent``: what the audit log shows for this client's requests (to tell them from the module's)."""

    def __init__(self, cluster, user_agent=None):
        api = k8s_config.new_client_from_config(config_file=cluster.kubeconfig)
        if user_agent:
            api.user_agent = user_agent
        self.dyn = dynamic.DynamicClient(api)

    def req(self, method, path, body=None, ctype="application/json", query=None):
        resp = self.dyn.request(method, path, body=body, serialize=False, content_type=ctype,
                                header_params={"Accept": "application/json"},
                                query_params=list((query or {}).items()))
        return json.loads(resp.data) if resp.data else None

    def get(self, path):
        try:
            return self.req("GET", path)
        except NotFoundError:
            return None

    def items(self, path, **query):
        return self.req("GET", path, query=query)["items"]

    def create(self, collection, body):
        return self.req("POST", collection, body)

    def delete(self, path, wait=False, query=None):
        """Delete (background propagation); ``wait``: until the object is gone. ``path`` may be a collection, with
        ``query`` (e.g. a labelSelector): one DELETE of every object it selects (not with ``wait``)."""
        assert not (wait and query), "wait is for one object"
        try:
            self.req("DELETE", path, {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"},
                     query=query)
        except NotFoundError:
            return
        while wait and self.get(path) is not None:
            time.sleep(0.2)
