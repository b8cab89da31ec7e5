"""`quartermaster jp`: JMESPath as Kyverno policies evaluate it, from the command line (as `kyverno jp`).

    quartermaster jp query -i pod.yaml 'spec.containers[].image'
    quartermaster jp parse 'to_upper(metadata.name)'
    quartermaster jp function [NAME...]

`query` evaluates with the Kyverno family's functions and cost bounds; `parse` prints the syntax tree; `function`
lists the functions beyond JMESPath's own. Exit 0, 1 when a query fails, 2 on unreadable input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from webhook.commandline import HelpFormatter, add_command

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def add_jp_command(commands: argparse._SubParsersAction, summary: str) -> None:
    jp = add_command(
        commands, "jp", summary,
        "JMESPath as Kyverno policies evaluate it here: `query` evaluates expressions on a JSON or YAML input (a\n"
        "file, or standard input), `parse` prints an expression's syntax tree, `function` lists the functions\n"
        "Kyverno adds to JMESPath. Exit 0, 1 when a query fails, 2 on unreadable input.",
        ["quartermaster jp query -i examples/gpu-pod.yaml 'spec.containers[].resources.limits'",
         "kubectl get pod train -o json | quartermaster jp query 'metadata.labels'",
         "quartermaster jp parse 'to_upper(metadata.name)'",
         "quartermaster jp function equal_fold"],
        run_jp)
    actions = jp.add_subparsers(dest="action", metavar="ACTION", required=True)
    query = actions.add_parser("query", help="evaluate expressions on a JSON or YAML input",
                               description="Evaluate each EXPRESSION on the input; print each result as JSON.",
                               **_examples("quartermaster jp query -i examples/gpu-pod.yaml 'metadata.name'",
                                           "kubectl get pod train -o json | quartermaster jp query -u 'metadata.name'"))
    query.add_argument("expressions", nargs="*", metavar="EXPRESSION", help="JMESPath expressions")
    query.add_argument("-i", "--input", default="-", metavar="FILE", help="the JSON or YAML input (default: stdin)")
    query.add_argument("-q", "--query-file", default=None, metavar="FILE", help="read an expression from this file")
    query.add_argument("-u", "--unquoted", action="store_true", help="a string result printed without quotes")
    parse = actions.add_parser("parse", help="print an expression's syntax tree",
                               description="Print each EXPRESSION's syntax tree as JSON.",
                               **_examples("quartermaster jp parse 'to_upper(metadata.name)'"))
    parse.add_argument("expressions", nargs="*", metavar="EXPRESSION", help="JMESPath expressions")
    parse.add_argument("-q", "--query-file", default=None, metavar="FILE", help="read an expression from this file")
    function = actions.add_parser("function", help="list the functions Kyverno adds to JMESPath",
                                  description="List the functions Kyverno adds to JMESPath, or the NAMEs given.",
                                  **_examples("quartermaster jp function", "quartermaster jp function equal_fold"))
    function.add_argument("expressions", nargs="*", metavar="NAME", help="function names (none: all of them)")
    function.set_defaults(query_file=None)


def _examples(*lines: str) -> dict[str, Any]:
    return {"epilog": "Examples:\n" + "\n".join(f"  {line}" for line in lines), "formatter_class": HelpFormatter}


def run_jp(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    from webhook.families.kyverno import jmespath_functions as jp  # the Kyverno family only for `jp`

    expressions = list(args.expressions)
    if args.query_file:
        try:
            expressions.append(Path(args.query_file).read_text(encoding="utf-8").strip())
        except OSError as exc:
            print(f"quartermaster jp: {args.query_file}: {exc.strerror or exc}", file=err)
            return EXIT_BAD_INPUT
    if args.action == "function":
        return _functions(jp.KyvernoFunctions(), expressions, out, err)
    if not expressions:
        print(f"quartermaster jp {args.action}: give an expression (or -q FILE)", file=err)
        return EXIT_BAD_INPUT
    if args.action == "parse":
        for expression in expressions:
            try:
                out.write(json.dumps(jp.compile_query(expression.strip()).parsed, indent=2) + "\n")
            except jp.JMESPathError as exc:
                print(f"quartermaster jp parse: {exc}", file=err)
                return EXIT_FAILED
        return EXIT_OK
    data = _read_input(args.input, err)
    if data is _UNREADABLE:
        return EXIT_BAD_INPUT
    for expression in expressions:
        try:
            result = jp.query(expression, data)
        except jp.JMESPathError as exc:
            print(f"quartermaster jp query: {exc}", file=err)
            return EXIT_FAILED
        text = result if args.unquoted and isinstance(result, str) else json.dumps(result, indent=2)
        out.write(f"{text}\n")
    return EXIT_OK


_UNREADABLE = object()


def _read_input(name: str, err: TextIO) -> Any:
    import yaml

    from webhook.model import boundedyaml

    try:
        text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
        documents = boundedyaml.safe_load_all(text)  # JSON is YAML
    except (OSError, yaml.YAMLError) as exc:
        print(f"quartermaster jp query: {name}: {exc}", file=err)
        return _UNREADABLE
    return documents[0] if len(documents) == 1 else documents


def _functions(table_owner: Any, names: list[str], out: TextIO, err: TextIO) -> int:
    import jmespath.functions

    own = set(jmespath.functions.Functions().FUNCTION_TABLE)  # JMESPath's built-ins
    table = table_owner.FUNCTION_TABLE
    wanted = names or sorted(name for name in table if name not in own)
    unknown = [name for name in wanted if name not in table]
    if unknown:
        print(f"quartermaster jp function: no function {', '.join(unknown)}", file=err)
        return EXIT_FAILED
    for name in wanted:
        signature = ", ".join("|".join(arg.get("types") or ["any"]) + ("..." if arg.get("variadic") else "")
                              for arg in table[name]["signature"])
        out.write(f"{name}({signature})\n")
    return EXIT_OK
