"""What a request may put in a label: a kind Kubernetes serves, a namespace the state holds (at most
MAX_NAMESPACES of them); anything else is `other`."""

from webhook.observability.labels import OTHER, RequestLabels


class Namespaces:
    def __init__(self, names):
        self.names = set(names)

    def get(self, kind, namespace, name):
        return {"metadata": {"name": name}} if kind == "Namespace" and not namespace and name in self.names else None


def test_kinds_kubernetes_serves_keep_their_name():
    assert [RequestLabels.kind(k) for k in ("Pod", "ResourceClaim", "Notebook", "Junk", "pod", "")] == \
        ["Pod", "ResourceClaim", "Notebook", OTHER, OTHER, OTHER]


def test_only_namespaces_the_state_holds_and_at_most_the_cap():
    labels = RequestLabels(Namespaces(["a", "b", "c"]), max_namespaces=2)
    assert [labels.namespace(n) for n in ("a", "nowhere", "", "b", "c", "a")] == ["a", OTHER, "", "b", OTHER, "a"]


def test_without_a_state_no_namespace_is_vouched_for_until_one_is_attached():
    labels = RequestLabels()
    assert labels.namespace("a") == OTHER
    labels.attach(Namespaces(["a"]))
    assert labels.namespace("a") == "a"
