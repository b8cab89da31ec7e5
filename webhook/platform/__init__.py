"""The batteries: platform policy kinds (quartermaster.dev/v1alpha1) for GPU platforms."""

from webhook.policy.kinds import PolicyKind


def platform_kinds() -> list[PolicyKind]:
    """Every platform policy kind; the composition root registers them."""
    return []
