"""The field_ownership module: O(objects) may be a release file's text (the upgrade role passes
operator-crds.yaml as downloaded), parsed by the module, and a document that is not an object is refused naming
the option."""

import pytest

from ansible_collections.calico_ops.lifecycle.plugins.modules import field_ownership as module
from ansible_collections.calico_ops.lifecycle.tests.unit.helpers.calico_releases import release_text


def test_objects_as_text_are_the_documents_of_the_file():
    text = release_text("v3.31.4", "tigera-operator.yaml")
    docs = module._documents(text)
    assert docs and all(d["kind"] and d["metadata"]["name"] for d in docs)
    assert module._documents(docs) == docs
    assert module._subject({"objects": text}).startswith("Namespace tigera-operator, ")


@pytest.mark.parametrize("objects, says", [("kind: A\n---\n- 1\n", "document 2 is a list"),
                                           ([{"kind": "A"}, "text"], "document 2 is a str")])
def test_a_document_that_is_not_an_object_is_refused(objects, says):
    with pytest.raises(ValueError, match=says):
        module._documents(objects)
    assert module._subject({"objects": objects}) == ""
