"""The batteries: platform policy kinds (quartermaster.dev/v1alpha1) for GPU platforms."""

from webhook.policy.kinds import PolicyKind


def platform_kinds() -> list[PolicyKind]:
    """Every platform policy kind; the composition root registers them.

    Imported here rather than at module level so that `webhook.platform.base`, which every battery
    imports, never pulls in the batteries themselves.
    """
    from webhook.platform.dra_policy import KIND as DEVICE_CLAIM_REWRITE
    from webhook.platform.notebook_policy import KIND as NOTEBOOK_INJECTION
    from webhook.platform.quota import KIND as PROFILE_QUOTA

    return [DEVICE_CLAIM_REWRITE, NOTEBOOK_INJECTION, PROFILE_QUOTA]
