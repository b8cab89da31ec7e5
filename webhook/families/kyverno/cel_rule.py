"""``validate.cel`` inside a ClusterPolicy: ValidatingAdmissionPolicy-style expressions on the project's CEL
engine, with ``variables``, ``paramKind``/``paramRef`` and ``auditAnnotations``."""

from __future__ import annotations

from typing import Any, Mapping

from webhook.model.quickinit import frozen_dataclass
from webhook.model.results import Outcome, RuleResult

from .rule_env import RuleEnv
from .rule_types import RuleRef
from .variables import JsonContext


class CelRuleError(ValueError):
    pass


# Kyverno compiles ClusterPolicy CEL with the admission-policy variables plus OrValueCompatEnvOptions
# (pkg/admissionpolicy/compiler.go): `x.orValue(y)` also on plain fields. Our "kyverno" environment is the one
# with that compatibility (and declares the same admission variables).
CEL_ENV = "kyverno"


def _compile(cel: Any, expression: str) -> Any:
    return cel.compile(expression, env=CEL_ENV)


@frozen_dataclass
class CompiledCel:
    expressions: tuple[tuple[Any, str, Any], ...]      # (program, message, messageExpression program)
    variables: tuple[tuple[str, Any], ...]
    param_kind: Mapping[str, Any] | None
    param_ref: Mapping[str, Any] | None
    audit_annotations: tuple[tuple[str, Any], ...]

    def check(self, ref: RuleRef, ctx: JsonContext, env: RuleEnv, resource: Any) -> RuleResult:
        """validate.cel as a rule's handler (rule_types.ValidationHandler): it reads the whole request."""
        return evaluate_cel(ref, self, ctx.data, env)


def compile_preconditions(conditions: Any, cel: Any) -> tuple[tuple[str, Any], ...]:
    """``celPreconditions``: named CEL match conditions; all must hold or the rule is skipped."""
    return tuple((str(c.get("name", "")), _compile(cel, str(c.get("expression", "")))) for c in conditions or [])


def preconditions_hold(conditions: tuple[tuple[str, Any], ...], activation: Mapping[str, Any]) -> bool:
    return all(program(activation) is True for _, program in conditions)


def compile_cel(spec: Mapping[str, Any], cel: Any, default_message: str = "") -> CompiledCel:
    """Raises the CEL engine's error (a compile error names the expression). An expression without a message
    uses the rule's ``validate.message``, as Kyverno does."""
    expressions = []
    for item in spec.get("expressions") or []:
        program = _compile(cel, str(item.get("expression", "")))
        message_expr = _compile(cel, item["messageExpression"]) if item.get("messageExpression") else None
        expressions.append((program, str(item.get("message") or default_message), message_expr))
    variables = tuple((str(v.get("name")), _compile(cel, str(v.get("expression", ""))))
                      for v in spec.get("variables") or [])
    audits = tuple((str(a.get("key")), _compile(cel, str(a.get("valueExpression", ""))))
                   for a in spec.get("auditAnnotations") or [])
    return CompiledCel(tuple(expressions), variables, spec.get("paramKind"), spec.get("paramRef"), audits)


def _params(compiled: CompiledCel, env: RuleEnv, namespace: str) -> Any:
    if not compiled.param_kind or not compiled.param_ref:
        return None
    ref, kind = compiled.param_ref, compiled.param_kind
    if env.lookups is None:
        raise CelRuleError("paramRef needs cluster state")
    if ref.get("name"):
        found = env.lookups.get(str(kind.get("apiVersion")), str(kind.get("kind")),
                                str(ref.get("namespace") or namespace), str(ref["name"]))
    else:
        items = env.lookups.list(str(kind.get("apiVersion")), str(kind.get("kind")),
                                 str(ref.get("namespace") or namespace), ref.get("selector"))
        found = items[0] if items else None
    if found is None and ref.get("parameterNotFoundAction") != "Allow":
        raise CelRuleError(f"params not found: {kind.get('kind')} {ref.get('name') or ref.get('selector')}")
    return found


def activation_of(request_doc: Mapping[str, Any], env: RuleEnv) -> dict[str, Any]:
    request = request_doc.get("request") or {}
    operation = request.get("operation")
    namespace = str(request.get("namespace") or "")
    namespace_object = env.namespace_object
    if namespace_object is None and namespace and (request.get("kind") or {}).get("kind") != "Namespace":
        namespace_object = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    return {
        "object": None if operation == "DELETE" else request.get("object"),
        "oldObject": request.get("oldObject") if operation in ("UPDATE", "DELETE") else None,
        "request": _admission_request(request), "namespaceObject": namespace_object,
    }


def evaluate_cel(ref: RuleRef, compiled: CompiledCel, request_doc: Mapping[str, Any], env: RuleEnv) -> RuleResult:
    """An evaluation error denies, as a ValidatingAdmissionPolicy with failurePolicy Fail (Kyverno passes none)."""
    name = ref.name
    request = request_doc.get("request") or {}
    activation = activation_of(request_doc, env)
    try:
        activation["params"] = _params(compiled, env, str(request.get("namespace") or ""))
        variables: dict[str, Any] = {}
        activation["variables"] = variables
        for var_name, program in compiled.variables:
            variables[var_name] = program.evaluate(activation)
        for program, message, message_expr in compiled.expressions:
            if program(activation) is not True:
                text = message_expr.evaluate(activation) if message_expr is not None else message
                return ref.result(Outcome.FAIL, text or f"failed expression: {program.expression}")
    except CelRuleError as exc:
        return ref.result(Outcome.ERROR, f"rule {name}: error in parameterized resource: {exc}")
    except Exception as exc:  # CelError and friends: the message names the expression
        return ref.result(Outcome.FAIL, f"rule {name}: expression evaluation failed: {exc}")
    return ref.result(Outcome.PASS, f"validation rule '{name}' passed.")


def _admission_request(request: Mapping[str, Any]) -> dict[str, Any]:
    kind = request.get("kind") or {}
    return {"operation": request.get("operation"), "namespace": request.get("namespace"),
            "name": request.get("name"), "userInfo": request.get("userInfo"), "kind": kind,
            "subResource": request.get("subResource", ""), "dryRun": request.get("dryRun", False)}
