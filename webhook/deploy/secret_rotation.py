"""Rotate the certificates kept in a Kubernetes Secret, and keep the webhooks' caBundle in step.

Order of the writes: the caBundle of every webhook configuration first, then the Secret. A rotation
only ever adds a CA to the bundle before anything signed by it is served, and only removes one after
its overlap, so the API server never meets a serving certificate it cannot verify (and the cross-
signed chain covers clients that keep the old bundle). The caBundle is reconciled on every run, so
a configuration reset by a render without cluster access (`helm template`, Argo CD) is repaired by
the next run even when nothing is due.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Protocol

from webhook.certs.generate import CA_CERT
from webhook.certs.material import CertMaterial
from webhook.certs.rotate import RotationPlan, RotationPolicy, plan_rotation
from webhook.model.quickinit import frozen_dataclass


class SecretLike(Protocol):
    data: dict[str, bytes]


class CaPublisher(Protocol):
    def read_secret(self, namespace: str, name: str) -> SecretLike: ...
    def write_secret(self, secret: SecretLike, data: dict[str, bytes]) -> None: ...
    def set_ca_bundle(self, kind: str, name: str, bundle: bytes) -> bool: ...


@frozen_dataclass
class SecretRotation:
    plan: RotationPlan
    published: tuple[str, ...]  # what was written, in order


def connect(kubeconfig: Path | None, in_cluster: bool):  # -> WebhookCaClient (a context manager)
    from webhook.kube.webhook_ca import WebhookCaClient

    return WebhookCaClient.connect(kubeconfig, in_cluster)


def rotate_secret(publisher: CaPublisher, namespace: str, name: str, mutating: list[str], validating: list[str],
                  policy: RotationPolicy = RotationPolicy(), now: dt.datetime | None = None, rotate_ca: bool = False,
                  dns_names: list[str] | None = None, dry_run: bool = False) -> SecretRotation:
    secret = publisher.read_secret(namespace, name)
    plan = plan_rotation(CertMaterial.from_data(secret.data), policy, now, rotate_ca, dns_names)
    if dry_run:
        return SecretRotation(plan, ())
    published = []
    bundle = plan.after.to_data()[CA_CERT]
    for kind, names in (("mutating", mutating), ("validating", validating)):
        for config in names:
            if publisher.set_ca_bundle(kind, config, bundle):
                published.append(f"caBundle of {kind} webhook configuration {config} updated")
    if plan.changed:
        publisher.write_secret(secret, {**secret.data, **plan.after.to_data()})  # other keys stay
        published.append(f"secret {namespace}/{name} updated; the webhook pods reload it without a restart")
    return SecretRotation(plan, tuple(published))
