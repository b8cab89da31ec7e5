"""The only package that imports a CEL library (cel-expr-python by default, cel-python as the reference).

    compiler = CelCompiler()                       # backend from $QUARTERMASTER_CEL
    program = compiler.compile(expr, env="admission")   # "admission" | "mutating" | "kyverno" | "dra"
    program.evaluate(activation, lookups) -> plain Python;  program(activation) -> bool
    shared = Activation(values)   # evaluate many expressions on one request: converted once per env
"""

from webhook.cel.activation import Activation
from webhook.cel.compiler import BACKENDS, CelCompiler, CelProgram
from webhook.cel.envs import ENVS
from webhook.cel.errors import CelError
from webhook.cel.values import to_json

__all__ = ["Activation", "BACKENDS", "ENVS", "CelCompiler", "CelError", "CelProgram", "to_json"]
