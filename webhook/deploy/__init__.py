"""Deployment tooling: the CRDs derived from the policy kinds, the Helm chart's generated files, and the
`certs` and `crds` commands (certificate inspection and rotation, in a cert dir or a Kubernetes Secret)."""
