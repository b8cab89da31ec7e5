"""The image's build stage, run as the Dockerfile says, without a container engine: its COPY lines fill a scratch
folder, its ENV lines set the environment, and its RUN lines run there, with `/opt/quartermaster` moved under the
scratch folder. So the stage that compiles the request path's modules cannot break unnoticed (it once checked the
uncompiled sources instead of the installed package, and every image build failed).

Two departures, said here: PIP_NO_CACHE_DIR is left out, so pip reads its cache instead of downloading the
dependencies again on every run (what it installs is the same); and the built stage is kept, as a container
engine keeps its layers, under the hash of what the stage reads (the Dockerfile, every file its COPY lines copy,
the interpreter): a run over the same inputs reuses it and checks the kept install again, any change builds anew.
QUARTERMASTER_IMAGE_STAGE_CACHE=0 always builds."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support import REPO

OPT = "/opt/quartermaster"


def build_stage() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", (REPO / "Dockerfile").read_text())
    steps = [tuple(line.strip().split(None, 1)) for line in text.splitlines()
             if line.strip() and not line.strip().startswith("#")]
    froms = [i for i, (op, _) in enumerate(steps) if op == "FROM"]
    return steps[froms[0] + 1:froms[1]]  # type: ignore[return-value]


IGNORED = shutil.ignore_patterns("__pycache__", "*.so", "*.c")


def copied_files(source: Path) -> list[Path]:
    """The files a COPY of `source` copies (what copytree with IGNORED takes)."""
    if not source.is_dir():
        return [source]
    out = []
    for directory, subdirectories, files in os.walk(source):
        ignored = IGNORED(directory, subdirectories + files)
        subdirectories[:] = sorted(d for d in subdirectories if d not in ignored)
        out += [Path(directory) / f for f in sorted(files) if f not in ignored]
    return out


def stage_key(steps: list[tuple[str, str]]) -> str:
    digest = hashlib.sha256(repr((steps, sys.version)).encode())
    for op, args in steps:
        if op == "COPY":
            for source in args.split()[:-1]:
                for path in copied_files(REPO / source):
                    digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def stage_cache(key: str, tmp_path: Path) -> Path:
    if os.environ.get("QUARTERMASTER_IMAGE_STAGE_CACHE") == "0":
        return tmp_path / "stage"
    root = Path(os.environ.get("QUARTERMASTER_TEST_CACHE", Path.home() / ".cache" / "quartermaster-tests"))
    return root / "image-stage" / key


def test_the_build_stage_builds_and_every_module_is_compiled(tmp_path: Path) -> None:
    steps = build_stage()
    kept = stage_cache(stage_key(steps), tmp_path)
    opt = kept / "opt" / "quartermaster"
    built = kept / "built"  # written last: a stage cut off half way is built again
    if not built.exists():
        for stale in kept.parent.glob("*"):  # stages of other sources: only the newest is kept
            shutil.rmtree(stale, ignore_errors=True)
        run_stage(steps, kept, opt)
        built.write_text("the build stage ran to its end\n")
    # the installed package, not the sources: its modules are the compiled ones
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PIP_", "VIRTUAL_ENV", "PYTHON"))}
    check = subprocess.run([str(opt / "bin" / "python"), "-m", "webhook.compiled", "--require-all"], cwd="/",
                           env=env, capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    assert (opt / "bin" / "quartermaster").exists()


def run_stage(steps: list[tuple[str, str]], tmp_path: Path, opt: Path) -> None:
    """Every step of the stage in `tmp_path`, `/opt/quartermaster` being `opt`."""
    workdir = tmp_path
    tmp_path.mkdir(parents=True, exist_ok=True)
    shims = tmp_path / "shims"  # `python` is the build image's interpreter: the one running the tests here
    shims.mkdir()
    (shims / "python").symlink_to(Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}")
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PIP_", "VIRTUAL_ENV", "PYTHON"))}
    env["PATH"] = f"{shims}:{env.get('PATH', '')}"
    ran = []
    for op, args in steps:
        if op == "ENV":
            for key, value in re.findall(r"(\w+)=(\S+)", args):
                if key != "PIP_NO_CACHE_DIR":
                    env[key] = value
        elif op == "WORKDIR":
            workdir = tmp_path / args.strip().lstrip("/")
            workdir.mkdir(parents=True, exist_ok=True)
        elif op == "COPY":
            *sources, target = args.split()
            destination = workdir / target if not target.startswith("/") else tmp_path / target.lstrip("/")
            for source in sources:
                origin = REPO / source
                if origin.is_dir():
                    shutil.copytree(origin, destination / source if target.endswith("/") else destination,
                                    ignore=IGNORED, dirs_exist_ok=True)
                else:
                    shutil.copy(origin, destination / source if target.endswith("/") else destination)
        elif op == "RUN":
            command = args.replace(OPT, str(opt))
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=workdir, env=env,
                                  capture_output=True, text=True, timeout=1200)
            assert done.returncode == 0, f"RUN {args}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            ran.append(args)
        else:
            raise AssertionError(f"the build stage has a step this test does not know how to run: {op} {args}")
    assert any("webhook.compiled --require-all" in command for command in ran)
