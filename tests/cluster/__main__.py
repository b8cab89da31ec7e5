"""python -m tests.cluster up DIR | down DIR: the test control plane from the command line."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tests.cluster.control import ControlPlaneError, down, up


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster",
                                     description="Start or stop the test control plane (tests/cluster/build builds it).")
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("up", help="start it in DIR and return once it is ready; leaves DIR/admin.kubeconfig")
    start.add_argument("directory", type=Path)
    stop = commands.add_parser("down", help="stop the control plane started in DIR")
    stop.add_argument("directory", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "up":
            started = time.monotonic()
            record = up(args.directory)
            print(f"control plane ready in {time.monotonic() - started:.1f} s: {record.server}")
            print(f"kubectl --kubeconfig {record.admin_kubeconfig} get nodes")
        else:
            down(args.directory)
            print(f"control plane in {args.directory} stopped")
    except ControlPlaneError as error:
        print(f"python -m tests.cluster {args.command}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
