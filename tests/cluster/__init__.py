"""The real Kubernetes control plane in the tests (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
simulated nodes), built from Kubernetes' Go modules by tests/cluster/build. `python -m tests.cluster up DIR`."""
