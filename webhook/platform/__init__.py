"""The batteries: one policy family, "platform" (quartermaster.dev/v1alpha1), for GPU platforms.

One subpackage per battery: dra/ (DeviceClaimRewrite), notebook/ (NotebookInjection), quota/
(ProfileQuota and its ResourceQuota backstop limits), queue/ (QueueAssignment: Kueue LocalQueues).
"""

from __future__ import annotations

from webhook.policy.family import PolicyKind
from webhook.policy.perdocument import PerDocumentFamily
from webhook.state.ledger import ReservationLedgers

FAMILY_NAME = "platform"


def platform_kinds() -> list[PolicyKind]:
    """Every platform policy kind (schemas only: the Helm chart's CRDs are generated from them)."""
    from webhook.platform.dra.compile import KIND as DEVICE_CLAIM_REWRITE
    from webhook.platform.notebook.policy import KIND as NOTEBOOK_INJECTION
    from webhook.platform.queue.policy import KIND as QUEUE_ASSIGNMENT
    from webhook.platform.quota.policy import KIND as PROFILE_QUOTA

    return [DEVICE_CLAIM_REWRITE, NOTEBOOK_INJECTION, PROFILE_QUOTA, QUEUE_ASSIGNMENT]


def platform_family(ledgers: ReservationLedgers) -> PerDocumentFamily:
    """The batteries as one family. `ledgers` holds the quota reservations for the life of the process."""
    # imported here so that importing webhook.platform (for platform_kinds' callers) stays cheap
    from webhook.platform.dra.compile import DOCUMENT_KIND as DEVICE_CLAIM_REWRITE
    from webhook.platform.notebook.policy import DOCUMENT_KIND as NOTEBOOK_INJECTION
    from webhook.platform.queue.kueue_classes import unmapped_device_classes
    from webhook.platform.queue.policy import DOCUMENT_KIND as QUEUE_ASSIGNMENT
    from webhook.platform.quota.policy import document_kind

    return PerDocumentFamily(FAMILY_NAME, [DEVICE_CLAIM_REWRITE, NOTEBOOK_INJECTION, document_kind(ledgers),
                                           QUEUE_ASSIGNMENT], set_checks=[unmapped_device_classes])
