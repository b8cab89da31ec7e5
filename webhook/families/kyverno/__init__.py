"""Kyverno ``kyverno.io/v1`` ClusterPolicy/Policy compatibility (the "kyverno" policy family).

family.py      the PolicyFamily: ClusterPolicy/Policy/PolicyException compiled together
policy.py      the CompiledPolicy the engine dispatches to (matching, phases, results per rule)
compile.py     schema checks, unsupported features as load errors, autogen
compile_rules.py   each rule into its typed handler, chosen once (rule_types.py: the rule records and handler
               protocols; rule_env.py: what the rules read beside the request)
fields.py      the kyverno.io/v1 rule schema's field names (unknown fields are load errors)
references.py  $(...) references into the policy document, resolved once at load
engine.py      one policy's rules against one request: mutate, validate, generate (guard.py: CEL preconditions,
               context and preconditions before every handler)
match.py       match/exclude blocks; rbac.py roles from RoleBindings
context.py     the variables document and context entries (variable, configMap, apiCall, globalReference)
variables.py   {{ }} substitution; jmespath_functions.py (+ jp_*.py: errors, regex, time, arithmetic, budget)
conditions.py  preconditions and deny operators
pattern.py     validation patterns with anchors (pattern_values.py: leaf operators, anchors.py: anchor keys)
validate.py (deny, pattern, anyPattern), foreach.py, cel_rule.py, podsecurity.py   validate handlers
mutate.py      mutate handlers (patches, foreach); generate.py: generate handlers (data, clone, cloneList)
exceptions.py  PolicyExceptions
mutate_strategic.py, patches6902.py   patchStrategicMerge with anchors, patchesJson6902
autogen.py     autogen-<rule> / autogen-cronjob-<rule>
convert.py, convert_pattern.py   `quartermaster convert` to ValidatingPolicy/MutatingPolicy
gotypes.py, images.py   Go value semantics (durations, wildcards, fmt.Sprint) and image references
"""
