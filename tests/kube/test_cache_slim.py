"""The informer cache keeps no managedFields: no policy reads them, and they are often half a pod."""

from webhook.kube.cache import ObjectCache


def pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": name, "namespace": "jdoe", "resourceVersion": "7",
        "managedFields": [{"manager": "kubelet", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {}}]}}


def test_put_relist_and_create_drop_managed_fields():
    cache = ObjectCache(namespaced=True)
    cache.put(pod("a"))
    cache.replace([pod("b"), pod("c")])
    assert cache.put_hint(pod("d"), cache.mark())
    for name in "bcd":
        stored = cache.get("jdoe", name)
        assert stored["metadata"] == {"name": name, "namespace": "jdoe", "resourceVersion": "7"}


def test_a_hint_is_kept_only_when_nothing_was_removed_since_it_was_read():
    # the informer is the truth: a hint read before a deletion may be of the deleted object, and would stay forever
    cache = ObjectCache(namespaced=True)
    cache.put(pod("a"))
    mark = cache.mark()
    cache.delete(pod("a"))
    assert not cache.put_hint(pod("a"), mark)
    assert cache.get("jdoe", "a") is None
    mark = cache.mark()
    cache.replace([pod("b")])  # a relist is a removal too
    assert not cache.put_hint(pod("c"), mark)
    mark = cache.mark()
    assert not cache.put_hint(pod("b"), mark)  # never replaces what the watch delivered
    assert cache.put_hint(pod("c"), mark)
    assert cache.get("jdoe", "c") is not None
