"""The command line's own quality: every command documented with examples, bounds checked by argparse with
the subcommand's usage, `validate` as a linter, messages without Python reprs."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest
import yaml

from tests.support import REPO
from webhook.cli import COMMANDS, build_parser, command_named, main

BROKEN_QUOTA = """\
apiVersion: quartermaster.dev/v1alpha1
kind: ProfileQuota
metadata:
  name: broken
spec:
  classes:
    personal:
      gpus: one
"""


def every_parser(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield path + (name,), sub
                yield from every_parser(sub, path + (name,))


def test_every_command_has_examples_and_every_option_help():
    commands = dict(every_parser(build_parser()))
    assert {("serve",), ("apply",), ("validate",), ("report",), ("certs",), ("certs", "rotate"), ("crds",)} <= set(commands)
    for path, parser in commands.items():
        text = parser.format_help()
        assert "Examples:\n  quartermaster " + " ".join(path) in text, f"{path}: no Examples section"
        for action in parser._actions:
            if action.option_strings and not isinstance(action, argparse._HelpAction):
                assert action.help, f"quartermaster {' '.join(path)} {action.option_strings[0]}: no help text"
        assert "None" not in text and "timedelta" not in text, f"{path}: a Python repr in the help"


def _command_lines(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each command's line in `quartermaster --help`: its name and summary, as the command list shows them."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {choice.dest: choice.help for choice in action._choices_actions}


def test_placeholders_list_what_the_declared_commands_say():
    """A command not being run is a placeholder with COMMANDS' summary; declared, it shows the same line."""
    declared = _command_lines(build_parser())
    assert declared == {name: summary for name, summary, _ in COMMANDS}
    assert _command_lines(build_parser(["--version"])) == declared
    assert _command_lines(build_parser(["apply", "pod.yaml"])) == declared


@pytest.mark.parametrize("argv, declared", [
    (["--version"], set()),
    (["--help"], set()),
    (["apply", "--policies", "serve", "pod.yaml"], {"apply"}),
    (["token-refresher", "--help"], {"token-refresher"}),
    (["bogus"], set()),
])
def test_only_the_command_being_run_is_declared(argv, declared):
    action = next(a for a in build_parser(argv)._actions if isinstance(a, argparse._SubParsersAction))
    whole = {name for name, sub in action.choices.items() if sub.get_default("run") is not None}
    assert whole == declared and command_named(argv) == (argv[0] if not argv[0].startswith("-") else None)


@pytest.mark.parametrize("argv, error", [
    (["serve", "--port", "99999"], "argument --port: 99999 is not a port number (1-65535)"),
    (["serve", "--port", "0"], "argument --port: 0 is not a port number (1-65535)"),
    (["serve", "--scan-interval", "-5"], "argument --scan-interval: -5 seconds is out of range (0 to 10000000)"),
    (["apply", "--policies", "polices", "pod.yaml"], "argument --policies/-p/--policy: polices: no such file or directory"),
    (["certs", "rotate", "--serving-days", "0"], "argument --serving-days: 0 is out of range (1 to 36500)"),
])
def test_bad_options_show_the_subcommands_usage(argv, error, capsys):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    err = capsys.readouterr().err
    prog = "quartermaster " + " ".join(a for a in argv[:2] if not a.startswith("-"))
    assert exited.value.code == 2 and err.startswith(f"usage: {prog} ")
    assert err.endswith(f"{prog}: error: {error}\n") and err.count("\n") <= 8


def test_validate_lints_like_serve_loads(tmp_path):
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir(), bad.mkdir()
    (good / "quota.yaml").write_text((REPO / "policies" / "profile-quota.yaml").read_text())
    (bad / "quota.yaml").write_text(BROKEN_QUOTA)
    (bad / "junk.yaml").write_text("kind: [\n")
    run = subprocess.run([sys.executable, "-m", "webhook", "validate", str(good), str(bad)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert run.stdout.splitlines() == [
        f"{bad / 'junk.yaml'}:2: document 0: invalid YAML: expected the node content, but found '<stream end>'",
        f"{bad / 'quota.yaml'}:8: document 0 field spec.classes.personal.gpus: 'one' is not a Kubernetes quantity (for example 1, 500m, 30Gi, 1Ti)",
    ]
    assert run.stderr == "quartermaster validate: 1 policy in 3 files, 2 problems\n"
    clean = subprocess.run([sys.executable, "-m", "webhook", "validate", str(REPO / "policies")],
                           capture_output=True, text=True, timeout=60)
    assert (clean.returncode, clean.stdout) == (0, "")
    assert clean.stderr == "quartermaster validate: 3 policies in 3 files, no problems\n"


def test_empty_policy_directory_is_a_warning(tmp_path, capsys):
    empty = tmp_path / "policies"
    empty.mkdir()
    assert main(["validate", str(empty)]) == 0
    assert f"warning: {empty}: no policy documents" in capsys.readouterr().err
    assert main(["validate", "--allow-empty", str(empty)]) == 0
    assert "warning" not in capsys.readouterr().err
    pod = tmp_path / "pod.yaml"
    pod.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "x"},
                                   "spec": {"containers": [{"name": "c", "image": "busybox"}]}}))
    assert main(["apply", "--policies", str(empty), str(pod)]) == 0
    err = capsys.readouterr().err
    assert f"quartermaster apply: warning: no policy in {empty}: every resource is admitted unchanged" in err
    assert err.count(str(empty)) == 1  # said once
    assert main(["apply", "--allow-empty", "--policies", str(empty), str(pod)]) == 0
    assert "warning" not in capsys.readouterr().err


def test_example_state_reports_pass_and_fail_rows():
    run = subprocess.run([sys.executable, "-m", "webhook", "report", "--state", "examples/state", "-o", "json"],
                         capture_output=True, text=True, timeout=60, cwd=REPO)
    assert run.returncode == 0, run.stderr
    import json

    results = {(r["scope"]["kind"], r["scope"]["name"], x["rule"]): x["result"]
               for r in json.loads(run.stdout)["items"] for x in r["results"]}
    assert results[("Pod", "trainer-0", "gpu-quota")] == "pass"
    assert results[("ResourceClaim", "shared-a100", "gpu-quota")] == "pass"
    assert "fail" in {results[("Pod", "train", "gpu-quota")], results[("Pod", "evaluate", "gpu-quota")]}
    assert "fail" in {results[("PersistentVolumeClaim", n, "storage-quota")] for n in ("home", "datasets")}


def test_readme_policy_error_is_the_real_one(tmp_path):
    """README shows `quartermaster validate` on the default policies with `gpus: one`: the same lines come out."""
    import shutil

    shutil.copytree(REPO / "policies", tmp_path / "policies")
    quota = tmp_path / "policies" / "profile-quota.yaml"
    lines = quota.read_text().splitlines(keepends=True)
    (index,) = [i for i, line in enumerate(lines) if line.strip() == "gpus: 1"]
    lines[index] = lines[index].replace("gpus: 1", "gpus: one")
    quota.write_text("".join(lines))
    run = subprocess.run([sys.executable, "-m", "webhook", "validate", "policies"], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path)
    readme = (REPO / "README.md").read_text()
    assert run.returncode == 2 and run.stdout.strip() and run.stdout.strip() in readme.splitlines()
    assert run.stderr.strip() in readme.splitlines()


def test_generated_certificates_live_as_long_as_the_docs_say(tmp_path):
    import datetime as dt

    from cryptography import x509

    from webhook.certs.generate import ensure_certificates

    assert ensure_certificates(tmp_path, ["localhost"])
    docs = (REPO / "docs" / "deploy.md").read_text()
    assert "the serving certificate (90 days)" in docs and "the CA (5 years)" in docs
    for name, days in (("tls.crt", 90), ("ca.crt", 1825)):
        cert = x509.load_pem_x509_certificate((tmp_path / name).read_bytes())
        lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
        assert abs(lifetime - dt.timedelta(days=days)) < dt.timedelta(minutes=10), name


def test_certs_rotate_speaks_in_hours(tmp_path, capsys):
    from webhook.certs.generate import ensure_certificates

    ensure_certificates(tmp_path, ["localhost"])
    assert main(["certs", "rotate", "--cert-dir", str(tmp_path), "--ca", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("would: CA rollover: new CA ") and "for at least 24 hours;" in out
    assert "0:00:00" not in out and "day," not in out and "None" not in out


def test_a_reader_that_goes_away_gets_no_traceback():
    """`quartermaster report | head -1`: the pipe closes before the output is written; that is the
    reader's choice, so exit 1 (as Python's own recipe for EPIPE does) without a traceback."""
    proc = subprocess.Popen([sys.executable, "-m", "webhook", "report", "--state", "examples/state", "-o", "yaml"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    proc.stdout.close()  # no reader left: the command's writes fail with EPIPE
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1, err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_validate_reports_a_policy_kept_with_a_compile_error(tmp_path, capsys):
    """A CEL expression that does not parse loads as a policy whose failure policy answers every request (Fail:
    every pod denied); validate said "no problems" about it."""
    policies = tmp_path / "p"
    policies.mkdir()
    (policies / "bad.yaml").write_text(
        "apiVersion: policies.kyverno.io/v1\nkind: ValidatingPolicy\nmetadata:\n  name: bad\nspec:\n"
        "  validationActions: [Deny]\n  matchConstraints:\n    resourceRules:\n    - apiGroups: ['']\n"
        "      apiVersions: [v1]\n      operations: [CREATE]\n      resources: [pods]\n"
        "  validations:\n  - expression: '1 +'\n")
    assert main(["validate", str(policies)]) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"{policies / 'bad.yaml'}: document 0 field spec.validations[0].expression: ")
    assert "ValidatingPolicy/bad would answer every request it matches with its failure policy, Fail" in out


def test_counts_in_messages_are_singular_for_one():
    from webhook.model.wording import counted
    assert [counted(n, "policy", "policies") for n in (0, 1, 2)] == ["0 policies", "1 policy", "2 policies"]
    assert [counted(n, "object") for n in (1, 3)] == ["1 object", "3 objects"]


def test_every_help_example_names_files_a_fresh_clone_has():
    """`quartermaster COMMAND --help` examples are meant to be pasted from the repository's root."""
    import glob
    import shlex

    from tests.support import REPO
    missing = []
    for command in ("serve", "apply", "test", "validate", "report", "convert", "jp"):
        shown = subprocess.run([sys.executable, "-m", "webhook", command, "--help"], capture_output=True, text=True,
                               timeout=60, cwd=REPO).stdout
        examples = shown.split("Examples:\n", 1)[1].splitlines()
        for line in examples:
            tokens = shlex.split(line.split("#", 1)[0])
            for before, token in zip(["", *tokens], tokens):
                relative = not token.startswith(("/", "~", "-")) and before != ">"  # not an output file
                looks_like_path = token.endswith((".yaml", ".json", "/")) or token.startswith(("examples", "policies"))
                if relative and looks_like_path and not glob.glob(str(REPO / token)):
                    missing.append(f"{command}: {token}")
    assert not missing, missing


def test_kyverno_test_habits_fail_only_yaml_and_require_tests(tmp_path):
    import shutil

    import yaml

    from tests.support import REPO
    suite = tmp_path / "notebook-home"
    shutil.copytree(REPO / "examples" / "kyverno" / "notebook-home", suite)
    test_file = suite / ".kyverno-test" / "kyverno-test.yaml"
    text = test_file.read_text()
    test_file.write_text(text.replace("result: pass", "result: fail", 1))  # one expectation made wrong

    def run(*extra):
        return subprocess.run([sys.executable, "-m", "webhook", "test", str(tmp_path), *extra], capture_output=True,
                              text=True, timeout=120)
    everything = yaml.safe_load(run("-o", "yaml").stdout)
    failing = run("--fail-only", "-o", "yaml", "--require-tests")
    assert failing.returncode == 1
    (only,) = yaml.safe_load(failing.stdout)
    assert only["failed"] == 1 and [r["RESULT"] for r in only["results"]] == ["Fail"]
    assert len(everything[0]["results"]) == only["passed"] + only["failed"]
    assert failing.stdout.rstrip().endswith(f"# {only['passed']} passed, 1 failed")
    table = run("--fail-only").stdout
    assert "| Fail" in table and "| Pass" not in table
    assert run("--require-tests", str(tmp_path / "nothing-here")).returncode == 2


def test_kyverno_apply_spellings_and_version():
    from tests.support import REPO
    from webhook import __version__

    def run(*argv):
        return subprocess.run([sys.executable, "-m", "webhook", *argv], capture_output=True, text=True, timeout=120,
                              cwd=REPO)
    assert run("version").stdout == f"quartermaster {__version__}\n"
    ours = run("apply", "--policies", "policies", "--state", "examples/state", "examples/gpu-pod.yaml", "-o", "json")
    kyverno = run("apply", "-p", "policies", "--state", "examples/state", "-r", "examples/gpu-pod.yaml", "-o", "json")
    assert (kyverno.returncode, kyverno.stdout) == (ours.returncode, ours.stdout) and ours.returncode == 0
    both = run("apply", "--policy", "policies/profile-quota.yaml", "--state", "examples/state", "examples/mig-pod.yaml",
               "--resource", "examples/gpu-pod.yaml")
    assert both.returncode == 1 and "2 admitted" not in both.stderr and "denied" in both.stderr  # one GPU: one fits
    missing = run("apply", "-p", "policies")
    assert missing.returncode == 2 and "give the manifests to admit" in missing.stderr


def test_jp_queries_parses_and_lists_kyvernos_functions_as_policies_evaluate_them():
    from tests.support import REPO

    def run(*argv, stdin=None):
        return subprocess.run([sys.executable, "-m", "webhook", "jp", *argv], capture_output=True, text=True,
                              timeout=120, cwd=REPO, input=stdin)
    limits = run("query", "-i", "examples/gpu-pod.yaml", "spec.containers[0].resources.limits")
    assert limits.returncode == 0 and json.loads(limits.stdout)["nvidia.com/gpu"] == 1
    # Kyverno's own functions, from standard input (kubectl get -o json | quartermaster jp query ...)
    piped = run("query", "-u", "to_upper(metadata.name)", stdin=json.dumps({"metadata": {"name": "train"}}))
    assert piped.stdout == "TRAIN\n"
    assert json.loads(run("parse", "to_upper(name)").stdout)["type"] == "function_expression"
    listed = run("function").stdout.splitlines()
    assert "equal_fold(string, string)" in listed and not any(line.startswith("length(") for line in listed)
    broken = run("query", "-i", "examples/gpu-pod.yaml", "nope(")
    assert broken.returncode == 1 and "incorrect query nope(" in broken.stderr
    assert run("query", "-i", "no-such-file.yaml", "a").returncode == 2
    assert run("function", "no_such_function").returncode == 1
