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
    assert cache.put_if_absent(pod("d"))
    for name in "bcd":
        stored = cache.get("jdoe", name)
        assert stored["metadata"] == {"name": name, "namespace": "jdoe", "resourceVersion": "7"}
