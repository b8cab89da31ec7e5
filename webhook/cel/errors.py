"""The one error type of the CEL engine."""


class CelError(Exception):
    """A CEL expression did not compile, or failed to evaluate; the message names the expression."""
