"""Every function of our CEL libraries, called on the default runtime with random arguments of each kind it
declares, answers a value or a CEL error: never another exception, never a crash (the calls run in a child
process, so a crash fails the test instead of ending the run)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from webhook.cel.envs import ENVS

REPO = Path(__file__).resolve().parents[2]

# CEL literals per declared kind: edge values first (empty, extremes, other types inside containers)
ARGUMENTS = {
    "string": ["''", "'a'", "'1Gi'", "'1.2.3'", "'10.0.0.1/8'", "'::1'", "'https://x/y?z=1'", "'é' * 3", "'1e-3'",
               "'-1'", "'{\"a\": [1]}'", "'a: [1'", "'*'", "'('"],
    "int": ["0", "-1", "9223372036854775807", "-9223372036854775808", "3"],
    "uint": ["0u", "18446744073709551615u"],
    "double": ["0.0", "-1.5", "1e308", "double('NaN')", "double('inf')"],
    "bool": ["true", "false"],
    "bytes": ["b''", "b'abc'", "b'\\xff'"],
    "null": ["null"],
    "list": ["[]", "[type(1), null]", "[1, 2]", "['a', 'b']", "[[1], []]", "[{'a': 1}]", "[null]", "[1, 'a']", "[1.5, 2]"],
    "map": ["{}", "{'a': 1}", "{'a': {'b': [1]}}", "{1: 2}", "{'apiVersion': 'v1', 'kind': 'Pod'}"],
    "timestamp": ["timestamp('2020-01-01T00:00:00Z')"],
    "duration": ["duration('1s')", "duration('-5m')"],
    "dyn": ["1", "type('a')", "'a'", "[1]", "{'a': 1}", "null", "true", "1.5"],
}

CHILD = """
import json, sys
sys.path.insert(0, {root!r})
from webhook.cel import CelCompiler, CelError
cpp = CelCompiler("cel-expr-python")
outcomes = {{"value": 0, "error": 0}}
for text in json.loads(sys.stdin.read()):
    try:
        cpp.compile(text, env="kyverno").evaluate({{"object": {{"a": 1}}}})
        outcomes["value"] += 1
    except CelError:
        outcomes["error"] += 1
    except Exception as exc:
        print(json.dumps({{"text": text, "raised": f"{{type(exc).__name__}}: {{exc}}"}}))
        sys.exit(3)
print(json.dumps(outcomes))
"""


def calls(seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for library in ENVS["kyverno"].libraries:
        for overload in library.overloads:
            for _ in range(3):
                args = [rng.choice(ARGUMENTS.get(kind, ARGUMENTS["dyn"])) for kind in overload.params]
                if overload.member:
                    texts.append(f"({args[0]}).{overload.name}({', '.join(args[1:])})")
                else:
                    texts.append(f"{overload.name}({', '.join(args)})")
    return texts


@pytest.mark.parametrize("seed", range(2))
def test_library_functions_answer_a_value_or_a_cel_error(seed):
    texts = calls(seed)
    done = subprocess.run([sys.executable, "-c", CHILD.format(root=str(REPO))], input=json.dumps(texts),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stdout[-500:], done.stderr[-500:])
    outcomes = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcomes["value"] > len(texts) // 10 and outcomes["error"] > len(texts) // 10, outcomes
