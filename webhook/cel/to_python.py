"""A checked CEL expression compiled to Python, for the subset the joined pod-security programs are made of.

Why: the CEL family's joined program (webhook.families.cel.fusedgroup) runs on every admission the 16
pod-security ValidatingPolicies match. On the default runtime that costs, per notebook pod, the object's
conversion into the runtime and an evaluation half made of optional selections
(`c.?securityContext.?privileged.orValue(false)`); the same tree as Python reads the pod where it lies
(`load-tests/bench_steps.py` measures both).

Exactness: a program compiled here returns a value only where CEL gives that very value; wherever CEL could
give anything else (an error, a value this module does not model exactly) it raises `Refused`, and the caller
evaluates as before, on the runtime. So every operation here is strict:
- `&&`, `||`, `!` and `?:` take booleans only; CEL absorbs an error in `false && error`, which short-circuit
  evaluation here gives too, and `error && false`, which raises here (the runtime then says false);
- equality and ordering compare values of one type only (strings, booleans, int64s, doubles, null; equality
  also lists and maps of those); CEL's cross-type rules (`1 == 1.0`, `null == 'a'`) are left to the runtime;
- ints are int64 (a JSON integer beyond it is refused: the runtime may read it otherwise), with overflow
  refused as CEL makes it an error;
- fields are read from dicts only (`x.f` of an absent key, or of anything but a dict, is refused), lists are
  iterated and indexed, never maps (CEL iterates a map's keys, in an order Python's dicts need not share);
- optional values (`x.?f`, consumed by `orValue`) are tracked when the tree is compiled, so a value is never
  mistaken for an optional; every other optional function, and every function not named here, makes the
  whole expression not compile here (`compile_tree` returns None).
Comprehensions (`all`, `exists`, `exists_one`, `map`, `filter`, `cel.bind`) are compiled from the runtime's own
expansion, loop condition and all; their ranges, every list or string `+` builds, every list `in` scans and
every list or map `==` compares charge one budget per evaluation, so no object or policy makes an evaluation
here long: past it, `Refused`.

The generated source names only its own locals and helpers, with the tree's strings and numbers held as
constants of the generated module (never spliced into the source).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from webhook.cel.backend_cpp import TOO_LONG
from webhook.cel.checked import Call, Comprehension, Const, Ident, ListOf, Node, Select
from webhook.cel.comprehensions import KEYS
from webhook.cel.to_python_ops import BUDGET, HELPERS, NOT_TOLD, Refused
from webhook.model.quickinit import frozen_dataclass

log = logging.getLogger(__name__)


class Unsupported(Exception):
    """The tree holds what this module does not compile."""


_INLINE_EQUAL = {"string": "str", "bool": "bool"}  # constants compared in place (_Compiler.equal): kind -> type

_HELPERS = HELPERS  # the generated module's namespace (webhook.cel.to_python_ops)
__all__ = ["BUDGET", "NOT_TOLD", "PythonProgram", "Refused", "Unsupported", "compile_tree"]


# CEL's binary operators -> the strict helpers of their operands' values
_OPERATORS = {"_<_": "_lt", "_<=_": "_le", "_>_": "_gt", "_>=_": "_ge", "_-_": "_sub", "_*_": "_mul"}
_COMPARISONS = frozenset({"_<_", "_<=_", "_>_", "_>=_"})
# string member functions, as in CEL's standard library: code points, as Python's str
_STRING_TESTS = {"contains": "_contains", "startsWith": "_starts_with", "endsWith": "_ends_with"}
# functions whose every call the runtime turns into an error (webhook.cel.backend_cpp's own guard)
REFUSED_FUNCTIONS = frozenset({TOO_LONG})


@dataclass
class _Function:
    """A generated Python function: a comprehension's, or the program's own (`parent` None)."""

    name: str
    parent: "_Function | None"
    params: list[str] = field(default_factory=list)  # outer locals it reads, passed by its callers
    lines: list[str] = field(default_factory=list)


@frozen_dataclass
class _Local:
    python: str  # the Python name
    owner: _Function  # the function it is a local of
    optional: bool = False
    boolean: bool = False  # always a bool
    strings: str | None = None  # bound to a literal list of strings: the name of their frozenset constant


@frozen_dataclass
class _Code:
    text: str  # a Python expression
    optional: bool = False  # its value is a CEL optional: a value, or _NONE
    boolean: bool = False  # its value is always a bool (when it has one)
    constant: bool = False  # a literal: evaluating it can never fail
    strings: str | None = None  # a literal list of strings: the name of their frozenset constant


class _Compiler:
    def __init__(self, roots: frozenset[str], joined: bool = False) -> None:
        self.roots = roots
        self.joined = joined
        self.constants: dict[str, Any] = {}
        self.functions: list[_Function] = []
        self.names = 0
        self.root_locals: dict[str, _Local] = {}
        self.root = _Function("run", None)

    def fresh(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}{self.names}"

    def constant(self, value: Any) -> str:
        name = self.fresh("_k")
        self.constants[name] = value
        return name

    def reach(self, local: _Local, where: _Function) -> str:
        """The local's Python name in `where`: a parameter of every function between it and its owner."""
        function = where
        while function is not local.owner:
            if function.parent is None:
                raise Unsupported("a name read outside its scope")
            if local.python not in function.params:
                function.params.append(local.python)
            function = function.parent
        return local.python

    def plain(self, node: Node, scope: Mapping[str, _Local], where: _Function) -> str:
        return self.value(node, scope, where).text

    def value(self, node: Node, scope: Mapping[str, _Local], where: _Function) -> _Code:
        code = self.expr(node, scope, where)
        if code.optional:
            raise Unsupported("an optional where a value is expected")
        return code

    def truth(self, node: Node, scope: Mapping[str, _Local], where: _Function) -> str:
        """A boolean operand: checked at run time unless it is known to be a bool."""
        code = self.value(node, scope, where)
        return code.text if code.boolean else f"_truth({code.text})"

    def expr(self, node: Node, scope: Mapping[str, _Local], where: _Function) -> _Code:
        if isinstance(node, Const):
            if node.kind in ("null", "bool"):
                return _Code(repr(node.value), boolean=node.kind == "bool", constant=True)
            if node.kind in ("int", "double", "string"):
                return _Code(self.constant(node.value), constant=True)
            raise Unsupported(f"a {node.kind or 'deprecated'} constant")
        if isinstance(node, Ident):
            local = scope.get(node.name)
            if local is None:
                if node.name not in self.roots:
                    raise Unsupported(f"the name {node.name!r}")
                local = self.root_locals.get(node.name)
                if local is None:
                    local = self.root_locals[node.name] = _Local(self.fresh("_v"), self.root)
            return _Code(self.reach(local, where), local.optional, local.boolean, strings=local.strings)
        if isinstance(node, Select):
            operand = self.plain(node.operand, scope, where)
            name = self.constant(node.field)
            # _has and _select, written out: a call per field cost more than reading the field
            held, reached = self.hold(operand)
            if node.test_only:
                return _Code(f"({name} in {held} if type({reached}) is dict else _refuse())", boolean=True)
            return _Code(f"({held}[{name}] if type({reached}) is dict and {name} in {held} else _refuse())")
        if isinstance(node, ListOf):
            if node.optional:
                raise Unsupported("optional list elements")
            elements = [self.value(e, scope, where) for e in node.elements]
            strings = None
            if elements and all(isinstance(e, Const) and e.kind == "string" for e in node.elements):
                strings = self.constant(frozenset(e.value for e in node.elements))  # type: ignore[union-attr]
            return _Code("[" + "".join(e.text + ", " for e in elements) + "]",
                         constant=all(e.constant for e in elements), strings=strings)
        if isinstance(node, Call):
            return self.call(node, scope, where)
        if isinstance(node, Comprehension):
            return self.comprehension(node, scope, where)
        raise Unsupported(type(node).__name__)

    def hold(self, text: str) -> tuple[str, str]:
        """`text` evaluated once and read again: (the name to read it by, the expression to evaluate first).
        A name is read as it is; anything else is bound to a fresh name where it is first evaluated."""
        if text.isidentifier():
            return text, text
        held = self.fresh("_o")
        return held, f"({held} := {text})"

    def equal(self, left: Node, right: Node, scope: Mapping[str, _Local], where: _Function) -> str:
        """`left == right`. Against a string or bool constant (most comparisons in policies) the value is compared
        in place when it has the constant's type, which is all `_eq` would do; anything else goes to `_eq`."""
        if isinstance(left, Const) and left.kind in _INLINE_EQUAL:
            left, right = right, left  # equality is symmetric; the constant on the right
        if isinstance(right, Const) and right.kind in _INLINE_EQUAL:
            operand, constant = self.plain(left, scope, where), self.plain(right, scope, where)
            held, reached = self.hold(operand)
            return (f"({held} == {constant} if type({reached}) is {_INLINE_EQUAL[right.kind]} "
                    f"else _eq(_b, {held}, {constant}))")
        return f"_eq(_b, {self.plain(left, scope, where)}, {self.plain(right, scope, where)})"

    def call(self, node: Call, scope: Mapping[str, _Local], where: _Function) -> _Code:
        name, target, args = node.function, node.target, node.args

        def value(n: Node) -> str:
            return self.plain(n, scope, where)

        def truth(n: Node) -> str:
            return self.truth(n, scope, where)

        if target is None and name == "_?._" and len(args) == 2 and isinstance(args[1], Const) \
                and args[1].kind == "string":
            # _optional_select and _optional_chain, written out: a call per selection cost more than the selection
            operand, name = self.expr(args[0], scope, where), self.constant(args[1].value)
            held, reached = self.hold(operand.text)
            select = f"({held}.get({name}, _NONE) if type({held}) is dict else _refuse())"
            if operand.optional:  # _NONE stays _NONE
                return _Code(f"(_NONE if {reached} is _NONE else {select})", optional=True)
            return _Code(f"({held}.get({name}, _NONE) if type({reached}) is dict else _refuse())", optional=True)
        if target is None and name == "_[?_]" and len(args) == 2:
            operand = self.expr(args[0], scope, where)
            helper = "_optional_index_chain" if operand.optional else "_optional_index"
            return _Code(f"{helper}({operand.text}, {value(args[1])})", optional=True)
        if target is not None and name in ("hasValue", "value") and not args:
            optional = self.expr(target, scope, where)
            if not optional.optional:
                raise Unsupported(f"{name}() of a value that is no optional")
            if name == "value":
                return _Code(f"_value({optional.text})")
            return _Code(f"({optional.text} is not _NONE)", boolean=True)
        if target is not None and name in _STRING_TESTS and len(args) == 1:
            return _Code(f"{_STRING_TESTS[name]}({value(target)}, {value(args[0])})", boolean=True)
        if target is None and name == KEYS and len(args) == 1:  # a two-variable comprehension's range
            return _Code(f"_indexes(_b, {value(args[0])})")
        if name in REFUSED_FUNCTIONS:
            operands = ", ".join(value(a) for a in ((target,) if target is not None else ()) + args)
            return _Code(f"_refuse({operands})")
        if target is not None and name == "orValue" and len(args) == 1:
            optional = self.expr(target, scope, where)
            if not optional.optional:
                raise Unsupported("orValue of a value that is no optional")
            held, default = self.fresh("_o"), self.value(args[0], scope, where)
            if default.constant:  # a literal cannot fail: evaluated only when needed
                return _Code(f"({default.text} if ({held} := {optional.text}) is _NONE else {held})")
            # CEL evaluates both (an error in the default is an error): so does a tuple, left to right
            return _Code(f"(({held} := {optional.text}), {default.text})[1 if {held} is _NONE else 0]")
        if target is None:
            if name == "_&&_" and len(args) == 2:
                return _Code(f"({truth(args[0])} and {truth(args[1])})", boolean=True)
            if name == "_||_" and len(args) == 2:
                return _Code(f"({truth(args[0])} or {truth(args[1])})", boolean=True)
            if name == "!_" and len(args) == 1:
                return _Code(f"(not {truth(args[0])})", boolean=True)
            if name in ("@not_strictly_false", "not_strictly_false") and len(args) == 1:
                return _Code(truth(args[0]), boolean=True)  # errors raise here: never an error value to let through
            if name == "_?_:_" and len(args) == 3:
                condition = truth(args[0])
                yes, no = self.value(args[1], scope, where), self.value(args[2], scope, where)
                return _Code(f"({yes.text} if {condition} else {no.text})", boolean=yes.boolean and no.boolean)
            if name == "_==_" and len(args) == 2:
                return _Code(self.equal(args[0], args[1], scope, where), boolean=True)
            if name == "_!=_" and len(args) == 2:
                return _Code(f"(not {self.equal(args[0], args[1], scope, where)})", boolean=True)
            if name in _OPERATORS and len(args) == 2:
                return _Code(f"{_OPERATORS[name]}({value(args[0])}, {value(args[1])})",
                             boolean=name in _COMPARISONS)
            if name == "_+_" and len(args) == 2:
                return _Code(f"_add(_b, {value(args[0])}, {value(args[1])})")
            if name == "-_" and len(args) == 1:
                return _Code(f"_neg({value(args[0])})")
            if name == "_[_]" and len(args) == 2:
                return _Code(f"_index({value(args[0])}, {value(args[1])})")
            if name == "@in" and len(args) == 2:
                item, container = value(args[0]), self.value(args[1], scope, where)
                if container.strings is not None:
                    return _Code(f"_in_strings({item}, {container.strings})", boolean=True)
                return _Code(f"_in(_b, {item}, {container.text})", boolean=True)
            if name == "size" and len(args) == 1:
                return _Code(f"_size({value(args[0])})")
        elif name == "size" and not args:
            return _Code(f"_size({value(target)})")
        raise Unsupported(f"the function {name!r}")

    def comprehension(self, node: Comprehension, scope: Mapping[str, _Local], where: _Function) -> _Code:
        if node.iter_var2:
            raise Unsupported("two-variable comprehensions")
        if isinstance(node.iter_range, ListOf) and not node.iter_range.elements:
            # cel.bind (a comprehension over no elements, its loop never runs): a local of `where`, bound in place
            init = self.expr(node.accu_init, scope, where)
            bound = _Local(self.fresh("_a"), where, init.optional, init.boolean, init.strings)
            result = self.expr(node.result, {**scope, node.accu_var: bound}, where)
            return _Code(f"(({bound.python} := {init.text}), {result.text})[1]", result.optional, result.boolean)
        function = _Function(self.fresh("_c"), where, params=["_b"])
        self.functions.append(function)
        init = self.value(node.accu_init, scope, function)
        accu = _Local(self.fresh("_a"), function, boolean=init.boolean)
        item = _Local(self.fresh("_i"), function)
        inner = {**scope, node.accu_var: accu, node.iter_var: item}
        # _range, written out in the loop's own function: a call less for every comprehension of every request
        iterated = self.fresh("_l")
        lines = [f"{accu.python} = {init.text}",
                 f"{iterated} = {self.plain(node.iter_range, scope, function)}",
                 f"if type({iterated}) is not list:",
                 "    _refuse()",
                 f"_b[0] -= len({iterated})",
                 "if _b[0] < 0:",
                 "    _refuse()",
                 f"for {item.python} in {iterated}:",
                 f"    if not {self.truth(node.loop_condition, inner, function)}:",
                 "        break"]
        step = self.value(node.loop_step, inner, function)
        # the accumulator stays what it was assumed to be: a bool if it began as one
        lines.append(f"    {accu.python} = {step.text if step.boolean or not accu.boolean else f'_truth({step.text})'}")
        result = self.expr(node.result, {**scope, node.accu_var: accu}, function)
        lines.append(f"return {result.text}")
        function.lines = lines
        # every parameter is a local of `where` or one of its own parameters (reach() made it so)
        return _Code(f"{function.name}({', '.join(function.params)})", result.optional, result.boolean)

    def module(self, node: Node) -> str:
        root = self.root
        self.functions.append(root)
        lines = [f"_b = [{BUDGET}]"]
        binds, elements = _joined(node) if self.joined else ([], None)
        if elements is None:
            lines.append(f"return {self.plain(node, {}, root)}")
        else:
            # a joined program (binds around a list of members' values): each element apart, so that one member's
            # value this module cannot tell leaves the others told (that element is _NONE)
            scope: dict[str, _Local] = {}
            for name, init in binds:
                code = self.expr(init, scope, root)
                local = _Local(self.fresh("_a"), root, code.optional, code.boolean, code.strings)
                lines.append(f"{local.python} = {code.text}")
                scope = {**scope, name: local}
            lines.append("_r = []")
            for element in elements:
                lines += ["try:", f"    _r.append({self.plain(element, scope, root)})",
                          "except Exception:", "    _r.append(_NONE)"]
            lines.append("return _r")
        prologue = [f"{local.python} = _vars[{self.constant(name)}]" for name, local in self.root_locals.items()]
        root.lines = prologue + lines
        out = []
        for function in self.functions:
            params = "_vars" if function is root else ", ".join(function.params)
            out.append(f"def {function.name}({params}):")
            out += ["    " + line for line in function.lines]
        return "\n".join(out) + "\n"


def _joined(node: Node) -> tuple[list[tuple[str, Node]], tuple[Node, ...] | None]:
    """A joined program's binds (name, value; outermost first) and list elements; elements None if it is not one."""
    binds = []
    while isinstance(node, Comprehension) and isinstance(node.iter_range, ListOf) and not node.iter_range.elements \
            and not node.iter_var2:
        binds.append((node.accu_var, node.accu_init))
        node = node.result
    if isinstance(node, ListOf) and not node.optional:
        return binds, node.elements
    return [], None


@frozen_dataclass
class PythonProgram:
    source: str  # the generated module (for tests and debugging)
    _run: Callable[[Mapping[str, Any]], Any]

    def evaluate(self, variables: Mapping[str, Any]) -> Any:
        """CEL's value of the program on `variables`; Refused wherever this module cannot tell it (any error)."""
        try:
            return self._run(variables)
        except Refused:
            raise
        except Exception as exc:  # a missing variable, a KeyError of a generated read: the runtime will say
            raise Refused from exc


def compile_tree(tree: Node | None, roots: frozenset[str], joined: bool = False) -> PythonProgram | None:
    """The tree as Python, reading the variables named in `roots`; None when it holds anything this module does
    not compile (then the runtime evaluates it, as before). `joined`: the tree is a joined program (binds around
    a list of members' values, webhook.families.cel.fusedgroup) whose elements are told apart: an element this
    module cannot tell is NOT_TOLD in the list, the others are still told."""
    if tree is None:
        return None
    compiler = _Compiler(roots, joined)
    try:
        source = compiler.module(tree)
        namespace: dict[str, Any] = {**_HELPERS, **compiler.constants}
        exec(compile(source, "<cel-to-python>", "exec"), namespace)  # our own source: names and constant refs only
    except (Unsupported, RecursionError, SyntaxError, MemoryError) as exc:
        log.debug("not compiled to Python: %s", exc)
        return None
    return PythonProgram(source, namespace["run"])
