"""The Kubernetes CEL oracle: Kubernetes' own CEL environment (k8s.io/apiserver at the version pinned in go.mod),
built by tests/oracle/build and driven over a line protocol by tests.oracle.client."""
