"""Seeded random pods and expressions in the shapes the corpus uses, for the CEL differential.

Each expression is drawn from a family of templates (presence tests, comprehensions, string and list library
calls, quantities, URLs, IPs and CIDRs, format, regex, optionals, durations and timestamps, arithmetic near
int64's edges, int/uint/double comparisons) with random operands: fields of the pod, literals, and values
of other types where a template takes any, so errors are drawn as well as values.
"""

from __future__ import annotations

import random
from typing import Callable

IMAGES = ["nginx:1.27", "ghcr.io/org/tool@sha256:" + "a" * 64, "registry.k8s.io/pause", "busybox", "x/y:latest", ""]
NAMES = ["web", "a", "sidecar", "init-1", "UPPER", "x.y", "-bad", "a_b", ""]
QUANTITIES = ["1", "100m", "1.5", "2Gi", "500Mi", "1k", "1000", "12Mi", "0", "-3", "1e3", "0.5Gi", "1024Ki", "3Ti"]
DURATIONS = ["1s", "1.5s", "1ns", "1.000000001s", "90m", "24h", "-1s", "0s", "1h30m", "100us", "1ms"]
TIMESTAMPS = ["2024-01-01T00:00:00Z", "2024-01-01T00:00:00.123456789Z", "1970-01-01T00:00:00Z",
              "2024-02-29T23:59:59.999999999Z", "2023-06-15T12:30:00+02:00"]
STRINGS = ["", "a", "abc", "ABC", "a,b,,c", "hello world", "é", "x-y_z", "%", "a.b.c", "  pad  "]
INTS = ["0", "1", "-1", "2", "7", "9223372036854775807", "-9223372036854775808", "1000"]
UINTS = ["0u", "1u", "2u", "18446744073709551615u"]
DOUBLES = ["0.0", "1.0", "-2.5", "1e300", "10.0", "0.5"]
URLS = ["https://example.com/a/b?x=1", "http://user@host:8080/p", "https://[::1]:443/", "/relative", "not a url",
        "https://ex.com/%zz"]
IPS = ["10.0.0.1", "::1", "192.168.1.300", "fe80::1", "127.0.0.1", "0.0.0.0", "::ffff:1.2.3.4"]
CIDRS = ["10.0.0.0/8", "192.168.0.0/16", "::1/128", "10.0.0.1/8", "1.2.3.4/33", "fd00::/8"]
REGEXES = ["^a", "[a-z]+", "^(web|a)$", "\\\\d+", "x|y", "(", "^$", "[[:alpha:]]"]
STRING_CALLS = ["lowerAscii()", "upperAscii()", "trim()", "size()", "split(',')", "charAt(1)", "substring(1)",
                "substring(1, 2)", "replace('a', 'b')"]
DURATION_TAILS = ["", ".getSeconds()", ".getMilliseconds()", " + duration('1ns')", " > duration('1s')"]
TIMESTAMP_TAILS = ["", ".getFullYear()", ".getMonth()", ".getHours()", " + duration('1ns')",
                   " - timestamp('2024-01-01T00:00:00Z')"]
BYTES = "b'x'"
LIFETIME = "object.metadata.?annotations.?lifetime.orValue('1s')"
NAMED_FORMATS = ["dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName", "dns1123LabelPrefix",
                 "dns1123SubdomainPrefix", "dns1035LabelPrefix", "labelValue", "uri", "uuid", "byte", "date", "datetime"]
FORMAT_INPUTS = NAMES + ["example.com", "a/b", "x.io/Name", "/a/b", "https://ex.com/%zz", "a" * 64, "trailing-",
                         "123e4567-e89b-12d3-a456-426614174000", "aGVsbG8=", "aGVsbG8", "2024-02-29", "2023-02-29",
                         "2024-01-01T10:00:00Z", "2024-01-01t25:00:00z", "-", "a.b/c.d/e"]
# the receivers two-variable comprehensions range over (lists whose order both sides share, and maps)
TWO_VAR_LISTS = ["object.spec.containers", "[3, 1, 2]", "['b', 'a']", "[]", "object.spec.?initContainers.orValue([])"]
FORMATS = ["'%s'", "'%d'", "'%s-%s'", "'%.2f'", "'%x'", "'%o'", "'%b'", "'%e'", "'%5s'", "'100%%'"]


def pod(rng: random.Random) -> dict:
    def container(index: int) -> dict:
        c: dict = {"name": rng.choice(NAMES) or f"c{index}", "image": rng.choice(IMAGES)}
        if rng.random() < 0.6:
            c["resources"] = {k: {r: rng.choice(QUANTITIES) for r in rng.sample(["cpu", "memory", "nvidia.com/gpu"],
                                                                                  rng.randint(0, 3))}
                              for k in rng.sample(["requests", "limits"], rng.randint(0, 2))}
        if rng.random() < 0.5:
            c["securityContext"] = {k: v for k, v in [("privileged", rng.choice([True, False])),
                                                      ("runAsUser", rng.choice([0, 1000, 65534])),
                                                      ("capabilities", {"drop": rng.sample(["ALL", "NET_RAW"], rng.randint(0, 2))})]
                                    if rng.random() < 0.6}
        if rng.random() < 0.5:
            c["ports"] = [{"containerPort": rng.choice([80, 443, 8080]), "hostPort": rng.choice([0, 80])}
                          for _ in range(rng.randint(0, 2))]
        if rng.random() < 0.3:
            c["env"] = [{"name": rng.choice(["A", "B", "PATH"]), "value": rng.choice(STRINGS)} for _ in range(rng.randint(1, 3))]
        return c

    labels = {k: rng.choice(NAMES) for k in rng.sample(["app", "team", "tier", "notebook-name"], rng.randint(0, 3))}
    annotations = {k: rng.choice(DURATIONS + URLS + STRINGS) for k in rng.sample(["lifetime", "url", "note"], rng.randint(0, 2))}
    spec: dict = {"containers": [container(i) for i in range(rng.randint(1, 3))]}
    if rng.random() < 0.4:
        spec["initContainers"] = [container(9)]
    if rng.random() < 0.4:
        spec["volumes"] = [{"name": "v", rng.choice(["emptyDir", "hostPath", "configMap"]): {}}]
    if rng.random() < 0.3:
        spec["hostNetwork"] = rng.choice([True, False])
    if rng.random() < 0.3:
        spec["priority"] = rng.choice([0, 1000, 2000000000])
    meta: dict = {"name": rng.choice(NAMES) or "p", "namespace": "team-a"}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _field(rng: random.Random) -> str:
    return rng.choice(["object.metadata.name", "object.spec.containers[0].name", "object.spec.containers[0].image",
                       "object.metadata.namespace", "object.spec.containers[0].?resources.?limits.?cpu.orValue('0')",
                       "object.metadata.?labels.?app.orValue('')", "object.metadata.?annotations.?lifetime.orValue('1s')"])


def _string(rng: random.Random) -> str:
    return rng.choice([repr(rng.choice(STRINGS)), _field(rng), repr(rng.choice(STRINGS)), "string(1)"])


def _number(rng: random.Random) -> str:
    return rng.choice([rng.choice(INTS), rng.choice(UINTS), rng.choice(DOUBLES), "size(object.spec.containers)",
                       "object.spec.?priority.orValue(0)", "object.spec.containers[0].?securityContext.?runAsUser.orValue(-1)"])


def _list(rng: random.Random) -> str:
    return rng.choice(["object.spec.containers", "object.spec.?initContainers.orValue([])", "[1, 2, 3]", "['a', 'b']",
                       "[]", "object.spec.containers.map(c, c.name)", "[3, 1, 2]", "object.metadata.?labels.orValue({})"])


def _shapes(rng: random.Random) -> list[Callable[[], str]]:
    s, n, lst = (lambda: _string(rng)), (lambda: _number(rng)), (lambda: _list(rng))
    return [
        lambda: f"has(object.{rng.choice(['spec.hostNetwork', 'metadata.labels', 'spec.volumes', 'metadata.annotations', 'spec.initContainers'])})",
        lambda: f"object.spec.containers.all(c, has(c.{rng.choice(['resources', 'securityContext', 'ports', 'env'])}))",
        lambda: f"object.spec.containers.exists(c, c.image.{rng.choice(['startsWith', 'endsWith', 'contains'])}({s()}))",
        lambda: f"object.spec.containers.exists_one(c, c.name == {s()})",
        lambda: f"object.spec.containers.map(c, c.?securityContext.?privileged.orValue(false))",
        lambda: f"object.spec.containers.filter(c, c.?ports.orValue([]).exists(p, p.hostPort != 0)).map(c, c.name)",
        lambda: f"{lst()}.{rng.choice(['size()', 'isSorted()', 'sum()', 'min()', 'max()'])}",
        lambda: f"{lst()}.{rng.choice(['indexOf', 'lastIndexOf'])}({rng.choice(['1', repr('a'), '2'])})",
        lambda: f"{s()}.{rng.choice(['indexOf', 'lastIndexOf'])}({s()}{rng.choice(['', ', 0', ', 2', ', 5', ', -1'])})",
        lambda: f"{s()}.{rng.choice(STRING_CALLS)}",
        lambda: f"{s()}.matches({repr(rng.choice(REGEXES))})",
        lambda: f"{s()}.find({repr(rng.choice(REGEXES))})",
        lambda: f"{s()}.findAll({repr(rng.choice(REGEXES))})",
        lambda: f"[{s()}, {s()}].join({rng.choice([repr('-'), ''])})",
        lambda: f"{rng.choice(FORMATS)}.format([{rng.choice([s(), n(), 'true', 'null', '[1]', BYTES])}])",
        lambda: f"quantity({repr(rng.choice(QUANTITIES))})",
        lambda: f"quantity({repr(rng.choice(QUANTITIES))}).{rng.choice(['isInteger()', 'asApproximateFloat()', 'asInteger()'])}",
        lambda: f"quantity({repr(rng.choice(QUANTITIES))}).{rng.choice(['add', 'sub'])}(quantity({repr(rng.choice(QUANTITIES))}))",
        lambda: f"quantity({repr(rng.choice(QUANTITIES))}).{rng.choice(['compareTo', 'isLessThan', 'isGreaterThan'])}(quantity({repr(rng.choice(QUANTITIES))}))",
        lambda: f"quantity({repr(rng.choice(QUANTITIES))}) == quantity({repr(rng.choice(QUANTITIES))})",
        lambda: f"isQuantity({s()})",
        lambda: f"sign(quantity({repr(rng.choice(QUANTITIES))}))",
        lambda: f"url({repr(rng.choice(URLS))}).{rng.choice(['getScheme()', 'getHost()', 'getHostname()', 'getPort()', 'getEscapedPath()', 'getQuery()'])}",
        lambda: f"isURL({repr(rng.choice(URLS))})",
        lambda: f"ip({repr(rng.choice(IPS))}).{rng.choice(['family()', 'isLoopback()', 'isUnspecified()', 'isGlobalUnicast()', 'isCanonical()'])}",
        lambda: f"isIP({repr(rng.choice(IPS))})",
        lambda: f"cidr({repr(rng.choice(CIDRS))}).{rng.choice(['prefixLength()', 'ip()', 'masked()'])}",
        lambda: f"cidr({repr(rng.choice(CIDRS))}).containsIP({repr(rng.choice(IPS))})",
        lambda: f"string(ip({repr(rng.choice(IPS))}))",
        lambda: f"duration({repr(rng.choice(DURATIONS))}){rng.choice(DURATION_TAILS)}",
        lambda: f"duration({rng.choice([repr(d) for d in DURATIONS] + [LIFETIME])})",
        lambda: f"timestamp({repr(rng.choice(TIMESTAMPS))}){rng.choice(TIMESTAMP_TAILS)}",
        lambda: f"string(timestamp({repr(rng.choice(TIMESTAMPS))}))",
        lambda: f"string(duration({repr(rng.choice(DURATIONS))}))",
        lambda: f"({n()}) {rng.choice(['+', '-', '*', '/', '%'])} ({n()})",
        lambda: f"({n()}) {rng.choice(['<', '<=', '>', '>=', '==', '!='])} ({n()})",
        lambda: f"{rng.choice(['int', 'uint', 'double', 'string'])}({n()})",
        lambda: f"object.?spec.?{rng.choice(['hostNetwork', 'priority', 'nodeName'])}.orValue({rng.choice(['false', '0', repr('')])})",
        lambda: f"object.spec.containers[?{rng.choice(['0', '1', '5'])}].?name.orValue('none')",
        lambda: f"object.metadata.?labels[?{rng.choice([repr('app'), repr('x')])}].hasValue()",
        lambda: f"{{{rng.choice([repr('a'), '1', 'true'])}: 1, {rng.choice([repr('b'), '2', 'true', '1'])}: 2}}",
        lambda: f"[{rng.choice([n(), s(), 'true'])}, {rng.choice([n(), s(), 'null'])}]",
        lambda: f"{s()} + {s()}",
        lambda: f"{s()} in object.metadata.?labels.orValue({{}})",
        lambda: f"type({rng.choice([n(), s(), lst(), 'null', 'true'])}) == {rng.choice(['int', 'uint', 'double', 'string', 'list', 'map', 'bool', 'null_type'])}",
        lambda: f"sets.{rng.choice(['contains', 'intersects', 'equivalent'])}({lst()}, {lst()})",
        lambda: f"{lst()}.all(x, x != {rng.choice(['1', repr('a'), 'null'])})",
    ]


_PREDICATES = ["i < 2", "v == v", "i == 0 && v != null", "string(v) != string(i)"]
_TYPE_ERRORS = ["v == 'a'", "i == 'x'", "v.size() > 0"]
_LIST_BODIES = ["i", "v", "[i]", "string(i) + string(v)"]
_CONTAINER_FILTERS = ["has(c.ports)", "i > 0", "c.name != 'a'"]
_MAP_BODIES = ["v", "i * 2", "string(v)"]
_LABEL_BODIES = ["v + k", "k.size()", "v.size() > 1"]
_ENTRIES = ["{c.name: i}", "{c.image: c.name}", "{string(i): c.name}"]
_SORTABLE = ["[3, 1, 2]", "['b', 'c', 'a']", "[]"]
_SORT_KEYS = ["x", "-x", "string(x)", "x == 1"]
_CONTAINER_KEYS = ["c.name", "c.image", "c.?resources.?limits.?cpu.orValue('')"]
_LISTS_V3 = ["sort()", "distinct()", "flatten()", "first().orValue(0)", "last().hasValue()", "slice(0, 1)"]
_LISTS_V3_RECEIVERS = ["[3, 1, 2]", "[1, 1, 2]", "[[1], [2, 3]]", "['a']"]
_QUANTIFIERS = ["all", "exists", "existsOne"]


def _two_variable_shapes(rng: random.Random) -> list[Callable[[], str]]:
    """Two-variable comprehensions, lists v3 and the named-format library (Kubernetes 1.34's stored environment).
    A transformList over a map is left out: Go ranges over a map in an order of its own."""
    def pick(items: list[str]) -> str:
        return rng.choice(items)

    def fmt() -> str:
        return pick(NAMED_FORMATS)

    def text() -> str:
        return repr(pick(FORMAT_INPUTS))

    lst, labels = (lambda: pick(TWO_VAR_LISTS)), "object.metadata.?labels.orValue({})"
    return [
        lambda: f"{lst()}.{pick(_QUANTIFIERS)}(i, v, {pick(_PREDICATES)})",
        lambda: f"object.spec.containers.{pick(_QUANTIFIERS)}(i, c, i < 1 || c.name == {_string(rng)})",
        lambda: f"{labels}.{pick(_QUANTIFIERS)}(k, v, k.startsWith('t') || v == {_string(rng)})",
        lambda: f"{lst()}.transformList(i, v, {pick(_LIST_BODIES)})",
        lambda: f"object.spec.containers.transformList(i, c, {pick(_CONTAINER_FILTERS)}, c.image)",
        lambda: f"{lst()}.transformMap(i, v, {pick(_MAP_BODIES)})",
        lambda: f"{labels}.transformMap(k, v, {pick(_LABEL_BODIES)})",
        lambda: f"{labels}.transformMap(k, v, k != 'app', v.upperAscii())",
        lambda: f"object.spec.containers.transformMapEntry(i, c, {pick(_ENTRIES)})",
        lambda: f"{labels}.transformMapEntry(k, v, {{v: k}})",
        lambda: f"{lst()}.all(i, v, {pick(_TYPE_ERRORS)})",
        lambda: "object.spec.containers.all(i, c, object.spec.containers.exists(j, d, j != i && d.name == c.name))",
        lambda: f"{pick(_SORTABLE)}.sortBy(x, {pick(_SORT_KEYS)})",
        lambda: f"object.spec.containers.sortBy(c, {pick(_CONTAINER_KEYS)}).map(c, c.name)",
        lambda: f"{pick(_LISTS_V3_RECEIVERS)}.{pick(_LISTS_V3)}",
        lambda: f"lists.range({pick(['0', '3', '-1'])})",
        lambda: f"format.{fmt()}().validate({text()}).orValue([])",
        lambda: f"format.{fmt()}().validate({_string(rng)}).hasValue()",
        lambda: f"format.named({repr(pick(NAMED_FORMATS + ['nope', '']))}).hasValue()",
        lambda: f"format.named({repr(fmt())}).value().validate({text()}).orValue(['valid'])",
        lambda: f"cel.bind(x, {_string(rng)}, x + x)",
    ]


def expression(rng: random.Random) -> str:
    shapes = _shapes(rng)
    return rng.choice(_two_variable_shapes(rng) if rng.random() < 0.3 else shapes)()
