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
from tests.cluster.quartermaster import CLUSTER_VALUES, Installation, install

# the tests' own policies, loaded beside the default ones: each matches only namespaces its test labels
TEST_POLICIES = Path(__file__).parent / "policies"


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
    # the chart's policies as the Deployment mounts them, rendered with the site's values (docs/deploy.md), and the
    # tests' own beside them
    installation = install(admin, control_plane, workdir, values=CLUSTER_VALUES)
    for source in sorted(TEST_POLICIES.glob("*.yaml")):
        shutil.copy(source, installation.policies / source.name)
    installation.start_replica("replica-a")
    installation.start_replica("replica-b")
    installation.start_front()
    installation.register()
    yield installation
    installation.stop()
