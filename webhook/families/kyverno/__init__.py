"""Kyverno ``kyverno.io/v1`` ClusterPolicy/Policy compatibility (the "kyverno" policy family)."""
