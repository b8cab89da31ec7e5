"""Fixtures of the real control plane: one cluster per test run (on one pytest-xdist worker: the tests carry
`xdist_group("cluster")`), the driver's devices published, Quartermaster installed through the chart with two
replicas behind a round-robin."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Iterator

import pytest

from tests.cluster.control import ClusterRecord, ControlPlaneError, binary, down, up
from tests.cluster.devices import device_classes, resource_slices
from tests.cluster.kube import Kube
from tests.cluster.kubeflow import install_notebook_crd
from tests.cluster.quartermaster import Installation, install
from tests.support import REPO

# the tests' own policies, loaded beside the default ones: each matches only namespaces its test labels
TEST_POLICIES = Path(__file__).parent / "policies"
# what those policies generate, beside the chart's default (the DRA rewrite's claim templates)
GENERATE_KINDS = [{"apiGroup": "resource.k8s.io", "resources": ["resourceclaimtemplates"]},
                  {"apiGroup": "", "resources": ["configmaps"]}]


@pytest.fixture(scope="session")
def qmcluster_binary() -> Path:
    try:
        return binary()
    except ControlPlaneError as error:
        if os.environ.get("CI"):
            pytest.fail(str(error))
        pytest.skip(str(error))


@pytest.fixture(scope="session")
def control_plane(qmcluster_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterRecord]:
    directory = tmp_path_factory.mktemp("control-plane")
    record = up(directory)
    yield record
    down(directory)


@pytest.fixture(scope="session")
def admin(control_plane: ClusterRecord, qmcluster_binary: Path) -> Kube:
    kube = Kube(control_plane, control_plane.admin_kubeconfig, qmcluster_binary)
    kube.apply_all(device_classes())
    kube.apply_all(resource_slices())
    install_notebook_crd(kube)
    return kube


@pytest.fixture(scope="session")
def quartermaster(admin: Kube, control_plane: ClusterRecord,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installation]:
    """Two live replicas behind a round-robin, registered through the chart's webhook configurations."""
    workdir = tmp_path_factory.mktemp("quartermaster")
    policies = workdir / "policies"
    policies.mkdir()
    for source in [*sorted((REPO / "policies").glob("*.yaml")), *sorted(TEST_POLICIES.glob("*.yaml"))]:
        shutil.copy(source, policies / source.name)
    installation = install(admin, control_plane, workdir, policies, {"live": {"generateKinds": GENERATE_KINDS}})
    installation.start_replica("replica-a")
    installation.start_replica("replica-b")
    installation.start_front()
    installation.register()
    yield installation
    installation.stop()
