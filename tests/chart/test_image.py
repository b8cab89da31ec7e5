"""The container image recipe (no container engine runs here, so the Dockerfile is checked as text):
a pinned slim base, a non-root numeric user the chart agrees with, nothing fetched but pip packages,
and a build context that holds exactly what the Dockerfile copies."""

import fnmatch
import re
import tomllib

from tests.chart.support import CHART, render
from tests.support import REPO

DOCKERFILE = (REPO / "Dockerfile").read_text()


def instructions():
    """(instruction, arguments) pairs, with continuation lines joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", DOCKERFILE)
    return [tuple(line.strip().split(None, 1)) for line in joined.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def final_stage():
    steps = instructions()
    last_from = max(i for i, (op, _) in enumerate(steps) if op == "FROM")
    return steps[last_from:]


def test_base_image_is_a_pinned_slim_python():
    (default,) = re.findall(r"^ARG PYTHON_IMAGE=(\S+)$", DOCKERFILE, re.M)
    assert re.fullmatch(r"python:(\d+)\.(\d+)\.(\d+)-slim-[a-z]+(@sha256:[0-9a-f]{64})?", default), default
    assert [args.split()[0] for op, args in final_stage() if op == "FROM"] == ["${PYTHON_IMAGE}"]
    major, minor = map(int, re.match(r"python:(\d+)\.(\d+)", default).groups())
    required = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    assert (major, minor) >= tuple(map(int, required.removeprefix(">=").split(".")))


def test_the_build_stage_compiles_with_the_same_python():
    """The compiled modules are built for one Python release: the build stage's, which must be the runtime's."""
    (runtime,) = re.findall(r"^ARG PYTHON_IMAGE=(\S+)$", DOCKERFILE, re.M)
    (build,) = re.findall(r"^ARG BUILD_IMAGE=(\S+)$", DOCKERFILE, re.M)
    assert build == runtime.split("@")[0].replace("-slim-", "-"), (build, runtime)
    stages = [args.split() for op, args in instructions() if op == "FROM"]
    assert stages[0] == ["${BUILD_IMAGE}", "AS", "build"]
    run = " ".join(args for op, args in instructions() if op == "RUN")
    assert "webhook.compiled --require-all" in run  # a build stage without a compiler fails, not a slow image
    copied = [src for op, args in instructions() if op == "COPY" and "--from" not in args for src in args.split()[:-1]]
    assert {"setup.py", "webhook"} <= set(copied)


def test_runs_as_the_non_root_user_the_chart_expects():
    users = [args for op, args in final_stage() if op == "USER"]
    assert users, "the final stage sets a USER"
    uid, gid = map(int, users[-1].split(":"))
    assert uid != 0 and gid != 0
    context = render().one("Deployment")["spec"]["template"]["spec"]["securityContext"]
    assert (context["runAsUser"], context["runAsGroup"]) == (uid, gid)


def test_entrypoint_and_defaults():
    ops = dict(final_stage())
    assert ops["ENTRYPOINT"] == '["quartermaster"]'
    assert "serve" in ops["CMD"] and ops["EXPOSE"] == str(render().one("Deployment")["spec"]["template"]["spec"]
                                                          ["containers"][0]["ports"][0]["containerPort"])


def test_nothing_downloaded_but_pip_packages():
    for op, args in instructions():
        assert op != "ADD", "ADD can fetch URLs; COPY is explicit"
        if op == "RUN":
            assert not re.search(r"\b(curl|wget|apt-get|apk|git clone)\b", args), args


def ignored(path: str, patterns: list[str]) -> bool:
    """Docker's .dockerignore semantics for the patterns used here: last match wins, ! re-includes."""
    result = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pattern = pattern.lstrip("!").rstrip("/")
        if fnmatch.fnmatch(path, pattern) or path.startswith(pattern + "/") or \
                (pattern.startswith("**/") and fnmatch.fnmatch(path.rsplit("/", 1)[-1], pattern[3:])):
            result = not negate
    return result


def test_build_context_holds_what_is_copied_and_nothing_else():
    patterns = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    copied = [src for op, args in instructions() if op == "COPY" and "--from" not in args
              for src in args.split()[:-1]]
    for source in copied:
        assert (REPO / source).exists(), source
        assert not ignored(source, patterns), f"{source} is copied but excluded from the context"
    for unwanted in ("tests/support.py", ".git/HEAD", "charts/quartermaster/Chart.yaml", "certs/ca.key",
                     "webhook/__pycache__/cli.cpython-311.pyc", ".venv/bin/python",
                     "webhook/model/patch.cpython-311-x86_64-linux-gnu.so"):
        assert ignored(unwanted, patterns), f"{unwanted} would be sent to the build"


def test_chart_app_version_is_the_package_version():
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    chart = (CHART / "Chart.yaml").read_text()
    assert f'appVersion: "{version}"' in chart
