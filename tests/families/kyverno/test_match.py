"""match/exclude: kinds with group/version/subresource, wildcards, selectors, operations, user info."""

from webhook.families.kyverno.match import RequestInfo, block_matches, rule_applies

DEPLOY = RequestInfo("apps", "v1", "Deployment", "CREATE", "web-1", "team-a", labels={"app": "web"},
                     annotations={"owner": "alice"}, namespace_labels={"env": "prod"}, username="alice",
                     groups=("devs",), cluster_roles=("edit",))


def _any(**resources):
    return {"any": [{"resources": resources}]}


def test_kinds_forms():
    for kinds in (["Deployment"], ["apps/v1/Deployment"], ["apps/*/Deployment"], ["*"], ["Pod", "Deploy*"]):
        assert block_matches(_any(kinds=kinds), DEPLOY), kinds
    assert not block_matches(_any(kinds=["batch/v1/Deployment"]), DEPLOY)
    exec_ = RequestInfo("", "v1", "Pod", "CONNECT", "p", "ns", subresource="exec")
    assert block_matches(_any(kinds=["Pod/exec"]), exec_) and not block_matches(_any(kinds=["Pod"]), exec_)


def test_names_namespaces_selectors_operations_annotations():
    assert block_matches(_any(kinds=["Deployment"], names=["web-*"], namespaces=["team-?"]), DEPLOY)
    assert not block_matches(_any(kinds=["Deployment"], namespaces=["kube-*"]), DEPLOY)
    assert block_matches(_any(selector={"matchLabels": {"app": "w*"}}), DEPLOY)
    assert block_matches(_any(namespaceSelector={"matchExpressions": [{"key": "env", "operator": "In",
                                                                        "values": ["prod"]}]}), DEPLOY)
    assert not block_matches(_any(operations=["DELETE"]), DEPLOY)
    assert block_matches(_any(annotations={"owner": "a*"}), DEPLOY)


def test_all_requires_every_filter_and_user_conditions():
    block = {"all": [{"resources": {"kinds": ["Deployment"]}}, {"subjects": [{"kind": "Group", "name": "devs"}]}]}
    assert block_matches(block, DEPLOY)
    assert not block_matches({"all": [{"resources": {"kinds": ["Deployment"]}}, {"clusterRoles": ["admin"]}]}, DEPLOY)


def test_exclude_wins_and_legacy_form():
    rule = {"match": {"resources": {"kinds": ["Deployment"]}},
            "exclude": {"any": [{"subjects": [{"kind": "User", "name": "alice"}]}]}}
    assert not rule_applies(rule, DEPLOY)
    assert rule_applies({"match": {"resources": {"kinds": ["Deployment"]}}}, DEPLOY)


GATED_BLOCKS = [
    _any(kinds=["Pod"]), _any(kinds=["Deployment", "StatefulSet"]), _any(kinds=["apps/v1/Deployment"]),
    _any(kinds=["Pod/exec"]), _any(kinds=["Deploy*"]), _any(kinds=["*"]), _any(kinds=["v1/Pod", "batch/*/CronJob"]),
    _any(names=["web-*"]), {"any": [{"resources": {"kinds": ["Pod"]}}, {"resources": {"namespaces": ["team-a"]}}]},
    {"all": [{"resources": {"kinds": ["Pod", "Deployment"]}}, {"resources": {"kinds": ["Deployment"]}}]},
    {"all": [{"resources": {"kinds": ["Deployment"]}}, {"resources": {"names": ["web-1"]}}]},
    {"resources": {"kinds": ["Deployment"], "namespaces": ["team-a"]}}, {"resources": {"kinds": ["Pod"]}},
    {"any": [{"resources": {"kinds": ["Deployment"], "operations": ["UPDATE"]}}]}, {}, {"any": []},
]


def test_a_rules_kind_gate_only_ever_says_no_where_the_filters_would():
    """Each rule's kinds, when its selectors name them without wildcards, decide first (a Pod meets the
    autogen rules of every pod controller): the same answers as the filters', for requests of each kind."""
    from webhook.families.kyverno.match import _gate_of as _kind_gate, excluded

    infos = [DEPLOY, RequestInfo("", "v1", "Pod", "CREATE", "web-1", "team-a"),
             RequestInfo("", "v1", "Pod", "CONNECT", "p", "ns", subresource="exec"),
             RequestInfo("batch", "v1", "CronJob", "CREATE", "c", "team-a"),
             RequestInfo("apps", "v1", "StatefulSet", "UPDATE", "web-1", "team-a")]
    for block in GATED_BLOCKS:
        for exclude in (None, _any(kinds=["StatefulSet"])):
            rule = {"match": block, "exclude": exclude}
            for info in infos:
                expected = block_matches(block, info) and not excluded(exclude, info)
                assert rule_applies(rule, info) is expected, (block, exclude, info.kind)
    assert _kind_gate(GATED_BLOCKS[1]) == {"Deployment", "StatefulSet"} and _kind_gate(GATED_BLOCKS[4]) is None
    assert _kind_gate(GATED_BLOCKS[9]) == {"Deployment"} and _kind_gate(GATED_BLOCKS[8]) is None
