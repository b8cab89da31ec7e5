"""Pure decisions: match, mutate, validate, dispatch (failure policy applied in one place), verdict."""

from webhook.engine.dispatch import AdmissionEngine, MutateResult

__all__ = ["AdmissionEngine", "MutateResult"]
