"""python -m tests.cluster up DIR | down DIR: the test control plane from the command line."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import json
import os
import signal

from tests.cluster.control import ClusterRecord, ControlPlaneError, binary, down, up


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster",
                                     description="Start or stop the test control plane (tests/cluster/build builds it).")
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("up", help="start it in DIR and return once it is ready; leaves DIR/admin.kubeconfig")
    start.add_argument("directory", type=Path)
    stop = commands.add_parser("down", help="stop the control plane started in DIR (and Quartermaster, if installed)")
    stop.add_argument("directory", type=Path)
    setup = commands.add_parser("install", help="install Quartermaster into the control plane of DIR as the tests do: "
                                "the chart's CRDs and RBAC, one live replica, the chart's webhook configurations")
    setup.add_argument("directory", type=Path)
    setup.add_argument("--set", dest="values", action="append", default=[], metavar="KEY=VALUE",
                       help="a chart value, as helm's --set spells it (image.repository=..., notebook.issuer=...)")
    args = parser.parse_args(argv)
    try:
        if args.command == "up":
            started = time.monotonic()
            record = up(args.directory)
            print(f"control plane ready in {time.monotonic() - started:.1f} s: {record.server}")
            print(f"kubectl --kubeconfig {record.admin_kubeconfig} get nodes")
        elif args.command == "install":
            print(install_quartermaster(args.directory.resolve(), chart_values_set(parser, args.values)))
        else:
            stop_quartermaster(args.directory.resolve())
            down(args.directory)
            print(f"control plane in {args.directory} stopped")
    except ControlPlaneError as error:
        print(f"python -m tests.cluster {args.command}: {error}", file=sys.stderr)
        return 1
    return 0


def chart_values_set(parser: argparse.ArgumentParser, settings: list[str]) -> dict[str, Any]:
    """helm's --set, for string values: a.b=c becomes {"a": {"b": "c"}}."""
    values: dict[str, Any] = {}
    for setting in settings:
        key, equals, value = setting.partition("=")
        if not equals or not key:
            parser.error(f"--set {setting!r}: expected KEY=VALUE")
        *parents, leaf = key.split(".")
        node = values
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return values


def install_quartermaster(directory: Path, values: dict[str, Any] | None = None) -> str:
    """One replica of `quartermaster serve --kubeconfig`, left running; its pid in DIR/quartermaster.json. `values`:
    the chart values a site sets (docs/deploy.md), for the rendered policies and objects."""
    from tests.cluster.devices import device_classes, resource_slices
    from tests.cluster.kube import Kube
    from tests.cluster.kubeflow import install_notebook_crd
    from tests.cluster.quartermaster import install

    record = ClusterRecord.read(directory)
    admin = Kube(record, record.admin_kubeconfig, binary())
    admin.apply_all(device_classes())
    admin.apply_all(resource_slices())
    install_notebook_crd(admin)
    installation = install(admin, record, directory / "quartermaster", values=values)
    replica = installation.start_replica("replica-a")
    installation.url = f"https://127.0.0.1:{replica.port}"
    installation.register()
    (directory / "quartermaster.json").write_text(json.dumps({"pid": replica.process.pid, "port": replica.port}))
    return (f"quartermaster serve --kubeconfig {installation.kubeconfig} on https://127.0.0.1:{replica.port} "
            f"(log: {replica.log}); webhooks registered")


def stop_quartermaster(directory: Path) -> None:
    path = directory / "quartermaster.json"
    if path.exists():
        try:
            os.kill(json.loads(path.read_text())["pid"], signal.SIGTERM)
        except ProcessLookupError:
            pass
        path.unlink()


if __name__ == "__main__":
    sys.exit(main())
