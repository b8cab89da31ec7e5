"""The only package that imports a CEL library (cel-python)."""

from webhook.cel.compiler import CelCompiler, CelError, CelProgram

__all__ = ["CelCompiler", "CelError", "CelProgram"]
