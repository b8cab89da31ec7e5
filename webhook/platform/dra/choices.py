"""A user's choice of GPU model or minimum GPU memory on a legacy pod, from annotations the policy names.

Only what the policy offers is accepted; anything else is refused with the list of what is on offer.
User text never reaches CEL: a model is looked up by name, a memory size is a validated quantity.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Mapping

from webhook.model.quantity import format_bytes, parse_quantity
from webhook.model.quickinit import frozen_dataclass
from webhook.platform.dra.config import MEMORY, ModelOption, UserChoices, fill


@frozen_dataclass
class ChoiceOutcome:
    selectors: tuple[str, ...] = ()
    asked: tuple[str, ...] = ()  # what the user asked for, in words, for the result message
    error: str = ""


def asked_for(annotations: Mapping[str, str], choices: UserChoices) -> tuple[str, ...]:
    """The choice annotations the pod carries."""
    return tuple(a for a in choices.annotations if a in annotations)


def _offer(models: tuple[ModelOption, ...]) -> str:
    return ", ".join(m.name + (f" ({m.description})" if m.description else "") for m in models)


def _model(value: str, choices: UserChoices) -> ModelOption | str:
    key = choices.model_annotation
    if not choices.models:
        return f"annotation {key}: this platform offers no choice of GPU model; remove the annotation"
    wanted = value.strip().lower()
    for model in choices.models:
        if model.name.lower() == wanted:
            return model
    return f"annotation {key}: GPU model {value!r} is not offered here; use one of: {_offer(choices.models)}"


def _memory(value: str, choices: UserChoices) -> tuple[str, Fraction] | str:
    key = choices.memory_annotation
    if not choices.memory_selector:
        return f"annotation {key}: this platform offers no choice of GPU memory; remove the annotation"
    text = value.strip()
    try:
        amount = parse_quantity(text)
    except ValueError:
        return f"annotation {key}: {value!r} is not a memory size; write it like 40Gi or 80Gi"
    if amount <= 0:
        return f"annotation {key}: {value!r} must be more than zero"
    if choices.memory_maximum is not None and amount > choices.memory_maximum:
        return (f"annotation {key}: {text} is more than any GPU here offers "
                f"(at most {format_bytes(choices.memory_maximum)})")
    return text, amount


def resolve_choices(annotations: Mapping[str, str], choices: UserChoices) -> ChoiceOutcome:
    selectors: list[str] = []
    asked: list[str] = []
    model = None
    if choices.model_annotation in annotations:
        model = _model(str(annotations[choices.model_annotation]), choices)
        if isinstance(model, str):
            return ChoiceOutcome(error=model)
        selectors.extend(model.selectors)
        asked.append(f"model {model.name}")
    if choices.memory_annotation in annotations:
        memory = _memory(str(annotations[choices.memory_annotation]), choices)
        if isinstance(memory, str):
            return ChoiceOutcome(error=memory)
        text, amount = memory
        if model is not None and model.memory is not None and amount > model.memory:
            return ChoiceOutcome(error=f"annotation {choices.memory_annotation}: {text} is more than GPU model "
                                       f"{model.name} has ({format_bytes(model.memory)}); ask for less or another model")
        selectors.append(fill(choices.memory_selector, MEMORY, text))
        asked.append(f"at least {text} of GPU memory")
    return ChoiceOutcome(tuple(selectors), tuple(asked))
