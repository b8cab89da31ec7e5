"""The environments: mutating constructions, Kyverno lookups, DRA type checks, variable references."""

import datetime

import jsonpatch
import pytest

from webhook.cel import CelCompiler, CelError
from webhook.model.lookups import LookupRefused

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-a", "labels": {"app": "x"}},
       "spec": {"containers": [{"name": "main", "image": "nginx"}]}}


def test_apply_configuration_construction_returns_plain_dicts(compiler):
    expr = ("Object{metadata: Object.metadata{labels: {'team': object.metadata.namespace}}, "
            "spec: Object.spec{containers: object.spec.containers.map(c, Object.spec.containers{name: c.name, "
            "securityContext: Object.spec.containers.securityContext{runAsNonRoot: true}})}}")
    result = compiler.compile(expr, env="mutating").evaluate({"object": POD})
    assert result == {"metadata": {"labels": {"team": "team-a"}},
                      "spec": {"containers": [{"name": "main", "securityContext": {"runAsNonRoot": True}}]}}


def test_jsonpatch_construction_applies(compiler):
    expr = ("[JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('example.com/owner'), "
            "value: 'me'}, JSONPatch{op: \"replace\", path: '/spec/containers/0/image', value: 'nginx:1.27'}]")
    patches = compiler.compile(expr, env="mutating").evaluate({"object": POD})
    patched = jsonpatch.apply_patch(POD, patches)
    assert patched["metadata"]["labels"]["example.com/owner"] == "me"
    assert patched["spec"]["containers"][0]["image"] == "nginx:1.27"


def test_strings_and_map_literals_are_not_rewritten(compiler):
    expr = "{'Object{a: 1}': dyn('x in {y: 1}'), 'k': dyn('a' in {'a': 1})}"
    assert compiler.compile(expr, env="mutating").evaluate({}) == {"Object{a: 1}": "x in {y: 1}", "k": True}


def test_construction_is_refused_outside_mutating_envs(cpp):
    with pytest.raises(CelError, match="does not compile"):
        cpp.compile("Object{spec: 1}", env="admission")


class FakeLookups:
    supplied = None

    def __init__(self):
        self.calls = []

    def get(self, api_version, kind, namespace, name):
        self.calls.append(("get", api_version, kind, namespace, name))
        if (kind, name) == ("ConfigMap", "registries"):
            return {"apiVersion": "v1", "kind": "ConfigMap", "data": {"allowed": "ghcr.io,quay.io"}}
        return None

    def list(self, api_version, kind, namespace="", selector=None):
        self.calls.append(("list", api_version, kind, namespace))
        return [{"metadata": {"name": "hpa-1"}}] if kind == "HorizontalPodAutoscaler" else []

    def global_context(self, name):
        if name == "clusters":
            return {"names": ["a", "b"]}
        raise KeyError(name)

    def http(self, method, url, body=None):
        raise LookupRefused(f"{method} {url}: network calls are refused offline")

    def image_data(self, ref):
        return {"config": {"created": "2024-01-01T00:00:00Z"}, "manifest": {"annotations": {}}}


def test_kyverno_lookups_go_through_the_lookups_protocol(compiler):
    lookups = FakeLookups()
    get = compiler.compile("resource.Get('v1', 'configmaps', 'default', 'registries').data.allowed.split(',')", env="kyverno")
    assert get.evaluate({}, lookups) == ["ghcr.io", "quay.io"]
    listed = compiler.compile("size(resource.List('autoscaling/v2', 'horizontalpodautoscalers', object.metadata.namespace).items)", env="kyverno")
    assert listed.evaluate({"object": POD}, lookups) == 1
    assert ("list", "autoscaling/v2", "HorizontalPodAutoscaler", "team-a") in lookups.calls
    # by group/version/resource (Kyverno 1.18+, its chainsaw validating-policies/context/resource)
    assert compiler.compile("resource.ToGVR('v1', 'Pod')", env="kyverno").evaluate({}, lookups) == \
        {"group": "", "version": "v1", "resource": "pods"}
    by_gvr = compiler.compile("resource.get(resource.ToGVR('v1', 'ConfigMap'), 'default', 'registries').data.allowed",
                              env="kyverno")
    assert by_gvr.evaluate({}, lookups) == "ghcr.io,quay.io"
    listed_by_gvr = compiler.compile("size(resource.list(resource.toGVR('autoscaling/v2', 'HorizontalPodAutoscaler'), "
                                     "object.metadata.namespace).items)", env="kyverno")
    assert listed_by_gvr.evaluate({"object": POD}, lookups) == 1
    ctx = compiler.compile("globalContext.Get('clusters', 'names')", env="kyverno")
    assert ctx.evaluate({}, lookups) == ["a", "b"]
    with pytest.raises(CelError, match="no global context entry"):
        compiler.compile("globalContext.Get('nope', '')", env="kyverno").evaluate({}, lookups)
    with pytest.raises(CelError, match="not found"):
        compiler.compile("resource.Get('v1', 'configmaps', 'x', 'y')", env="kyverno").evaluate({}, lookups)


def test_http_is_refused_unless_the_lookups_answers(compiler):
    program = compiler.compile("http.Get('https://example.com/x').allowed", env="kyverno")
    with pytest.raises(CelError, match="refused offline"):
        program.evaluate({}, FakeLookups())
    with pytest.raises(CelError, match="no cluster data"):
        program.evaluate({})

    class Answering(FakeLookups):
        def http(self, method, url, body=None):
            return {"allowed": method == "GET"}
    assert program.evaluate({}, Answering()) is True


def test_kyverno_helpers(compiler):
    kyverno = lambda expr, act={}: compiler.compile(expr, env="kyverno").evaluate(act, FakeLookups())  # noqa: E731
    assert kyverno("image('nginx').registry() + ' ' + image('nginx').repository() + ' ' + image('nginx').tag()") == \
        "index.docker.io library/nginx latest"
    assert kyverno("image('ghcr.io/org/app:1.2').registry() + '/' + image('ghcr.io/org/app:1.2').identifier()") == "ghcr.io/1.2"
    assert kyverno("image('ghcr.io/a/b@sha256:' + 'f' * 1).containsDigest()" .replace(" + 'f' * 1", " + '" + "f" * 64 + "'")) is True
    assert kyverno("isImage('UPPER/case') || !isImage('ok/name:v1')") is False
    assert kyverno("parseServiceAccount('system:serviceaccount:ns1:builder')") == {"Namespace": "ns1", "Name": "builder"}
    assert kyverno("parseServiceAccount('alice')") == {"Namespace": "", "Name": ""}
    assert kyverno("json.unmarshal('{\"a\": [1, 2]}').a[1]") == 2
    assert kyverno("yaml.parse('a:\\n  b: c').a.b") == "c"
    assert kyverno("sha256('abc').substring(0, 8) + md5('').substring(0, 4)") == "ba7816bfd41d"
    # Kyverno 1.18+'s other spellings (Kyverno's chainsaw validating-policies/context/hash and friends)
    assert kyverno("hash.sha256('abc') == sha256('abc') && hash.md5('') == md5('') && hash.sha1('a') == sha1('a')") is True
    for spelling in ("globalContext.get('entry')", "globalContext.get('entry', 'path')", "http.get('https://x.example')",
                     "http.post('https://x.example', {'a': 1})"):
        compiler.compile(spelling, env="kyverno")  # declared: the lookups answer or refuse it at run time
    assert kyverno("size(random('[a-z]{5}'))") == 5
    assert kyverno("image.GetMetadata('nginx').config.created") == "2024-01-01T00:00:00Z"
    now = kyverno("time.now()")
    assert isinstance(now, datetime.datetime) and now.tzinfo is not None


def test_generator_apply_collects_objects(compiler):
    program = compiler.compile("generator.Apply('team-a', [{'apiVersion': dyn('v1'), 'kind': dyn('ConfigMap'), 'metadata': dyn({'name': 'c'})}])", env="kyverno")
    generated = []
    assert program.evaluate({}, FakeLookups(), generated=generated) is True  # Kyverno: usable inside all()
    assert generated == [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "team-a"}}]
    with pytest.raises(CelError, match="only collected"):
        program.evaluate({}, FakeLookups())


def test_unknown_function_is_a_compile_error_naming_it(compiler):
    with pytest.raises(CelError, match="does not compile.*frobnicate"):
        compiler.compile("frobnicate(object)", env="kyverno")
    with pytest.raises(CelError, match="does not compile"):
        CelCompiler("cel-expr-python").compile("object.spec.frob()", env="admission")
    with pytest.raises(CelError, match="resource"):
        CelCompiler("cel-expr-python").compile("resource.Get('v1', 'pods', 'a', 'b')", env="admission")


def test_authorizer_compiles_and_explains_at_evaluation(compiler):
    program = compiler.compile("authorizer.group('apps').resource('deployments').namespace('a').name('b').check('create').allowed()")
    with pytest.raises(CelError, match="no API server"):
        program.evaluate({})


DEVICE = {"driver": "gpu.nvidia.com",
          "attributes": {"gpu.nvidia.com": {"productName": {"string": "NVIDIA A100-SXM4-40GB"}, "profile": "1g.5gb",
                                            "driverVersion": {"version": "550.54.15"}}},
          "capacity": {"gpu.nvidia.com": {"memory": {"value": "40Gi"}}}}


def test_dra_selectors_evaluate_with_kubernetes_types(compiler):
    dra = lambda expr: compiler.compile(expr, env="dra")({"device": DEVICE})  # noqa: E731
    assert dra("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].profile == '1g.5gb'")
    assert dra("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0")
    assert dra("device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('535.0.0'))")
    assert dra("device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA A100')")


@pytest.mark.parametrize("typo,message", [
    ("device.attribute['gpu.nvidia.com'].profile == 'x'", "device has no field 'attribute'"),
    ("device.attributes['gpu.nvidia.com'].profle == 'x'", "has no 'profle'"),
    ("device.capacity['gpu.nvidia.com'].memroy.isInteger()", "has no 'memroy'"),
    ("object.spec == 1", "undeclared reference to 'object"),
])
def test_dra_typos_are_compile_errors(compiler, typo, message):
    with pytest.raises(CelError, match=message):
        compiler.compile(typo, env="dra")


def test_unknown_domains_stay_open(cpp):
    assert cpp.compile("device.attributes['example.com'].anything == 1", env="dra")(
        {"device": {"driver": "x", "attributes": {"example.com": {"anything": {"int": 1}}}}})


def test_variable_refs():
    program = CelCompiler().compile("variables.a + variables.?b.orValue(0) + variables['c'] + object.variables.d", env="kyverno")
    assert program.variable_refs == frozenset({"a", "b", "c"}) and not program.uses_all_variables
    assert CelCompiler().compile("size(variables) > 0").uses_all_variables


def test_unknown_env_and_backend():
    with pytest.raises(CelError, match="unknown CEL environment"):
        CelCompiler().compile("true", env="nope")
    with pytest.raises(CelError, match="unknown CEL backend"):
        CelCompiler("cel-java")


def test_shared_activation_and_time_valued_variables(compiler):
    """Variables computed earlier (durations, timestamps) feed later expressions; one Activation serves many."""
    from webhook.cel import Activation
    duration = compiler.compile("duration(string(variables.hours) + 'h')", env="kyverno").evaluate({"variables": {"hours": 2}})
    assert duration == datetime.timedelta(hours=2)
    shared = Activation({"object": POD, "variables": {"max": duration,
                                                      "created": datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)}})
    later = compiler.compile("variables.created + variables.max > timestamp('2024-01-01T01:00:00Z')", env="kyverno")
    assert later(shared) is True
    assert compiler.compile("object.metadata.name + '/' + string(variables.max)", env="kyverno").evaluate(shared) == "p/7200s"
    assert compiler.compile("authorizer.group('').resource('pods')", env="admission").evaluate(shared)["resource"] == "pods"


def test_results_convert_to_json_like_cel_go(compiler):
    from webhook.cel import to_json
    value = compiler.compile("{'at': dyn(timestamp('2024-05-01T10:00:00Z')), 'for': dyn(duration('90s')), 'b': dyn(b'hi'), "
                             "'n': dyn([1]), 'q': dyn(quantity('1500m')), 'ip': dyn(cidr('10.1.2.3/8').masked())}").evaluate({})
    assert to_json(value) == {"at": "2024-05-01T10:00:00Z", "for": "90s", "b": "aGk=", "n": [1], "q": "1500m", "ip": "10.0.0.0/8"}


def test_opaque_variables_stay_typed(compiler):
    """A variable holding a quantity is still a quantity when the next expression reads it."""
    limit = compiler.compile("quantity('2Gi')").evaluate({})
    program = compiler.compile("variables.limit.isGreaterThan(quantity(object.mem)) && variables.limit.add(1).isInteger()")
    assert program({"object": {"mem": "1Gi"}, "variables": {"limit": limit}}) is True


def test_kyverno_lookups_answered_by_the_standalone_state(compiler):
    from webhook.state.memory import InMemoryClusterState
    state = InMemoryClusterState([
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "registries", "namespace": "platform"},
         "data": {"allowed": "ghcr.io"}},
        {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
         "metadata": {"name": "web", "namespace": "team-a", "labels": {"app": "web"}}},
    ])
    allowed = compiler.compile("image(object.spec.containers[0].image).registry() in "
                               "resource.Get('v1', 'configmaps', 'platform', 'registries').data.allowed.split(',')", env="kyverno")
    pod = {**POD, "spec": {"containers": [{"name": "a", "image": "ghcr.io/org/app:1"}]}}
    assert allowed({"object": pod}, state.lookups) is True
    assert allowed({"object": POD}, state.lookups) is False
    hpas = compiler.compile("resource.List('autoscaling/v2', 'horizontalpodautoscalers', 'team-a').items.map(h, h.metadata.name)", env="kyverno")
    assert hpas.evaluate({}, state.lookups) == ["web"]
    with pytest.raises(CelError, match="keeps no global context"):
        compiler.compile("globalContext.Get('x', '')", env="kyverno").evaluate({}, state.lookups)



def test_presence_tests_on_null_and_scalars_are_absent_as_in_cel_go(compiler):
    """A YAML `metadata:` with no value is null; cel-go (Kubernetes, Kyverno) answers presence tests on it
    with "absent", so `metadata.?annotations[?k]` is none and `has(metadata.annotations)` is false."""
    cronjob = {"spec": {"jobTemplate": {"spec": {"template": {"metadata": None, "spec": {"containers": [{"name": "c"}]}}}}}}
    assert compiler.compile("has(object.spec.jobTemplate.spec.template.metadata.annotations)")({"object": cronjob}) is False
    assert compiler.compile("has(object.spec.jobTemplate.spec.template.spec)")({"object": cronjob}) is True
    with pytest.raises(CelError):
        compiler.compile("has(object.spec.missing.field)")({"object": cronjob})
    if compiler.backend == "cel-expr-python":  # cel-python cannot parse optional syntax
        program = compiler.compile("object.spec.jobTemplate.spec.template.metadata.?annotations[?'corp.org/department']"
                                   ".orValue('') != ''")
        assert program({"object": cronjob}) is False
        assert compiler.compile("object.?name.?first.orValue('none')").evaluate({"object": {"name": "scalar"}}) == "none"


def test_optional_result_is_an_error_that_says_what_to_do(cpp):
    with pytest.raises(CelError, match="orValue"):
        cpp.compile("object.?spec").evaluate({"object": {"spec": {}}})


def test_presence_on_statically_typed_receivers(cpp):
    """The receiver rewrite must type-check when the checker knows R (a literal, a function's declared map)."""
    assert cpp.compile("{'a': 1}.?a.orValue(0) + [1][?0].orValue(5) + optional.of({'x': 1}).?x.orValue(0)").evaluate({}) == 3
    program = cpp.compile("resource.List('autoscaling/v1', 'horizontalpodautoscalers', 'ns').?items.orValue([]).size()", env="kyverno")
    assert program.evaluate({}, FakeLookups()) == 1


def test_deep_mutations_compile_although_the_faithful_form_is_deeper(cpp):
    """The rewritten (cel-go faithful) form nests deeper; it is only used after an error it addresses,
    so a deep ApplyConfiguration still compiles within the parser's depth limit."""
    inner = "Object.spec.a.b.c.d{x: object.?spec.?a.?b.?c.?d.?x.orValue(0) + 1}"
    for name in ("d", "c", "b", "a"):
        inner = f"Object.spec.{name}{{{name}: {inner}, y: string(object.?spec.?y.orValue(1))}}"
    program = cpp.compile(f"Object{{spec: {inner}}}", env="mutating")
    result = program.evaluate({"object": {"spec": {"y": 2}}})
    assert result == {"spec": {"a": {"b": {"c": {"d": {"x": 1}, "y": "2"}, "y": "2"}, "y": "2"}, "y": "2"}}
