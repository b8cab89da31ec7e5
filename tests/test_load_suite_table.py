"""load-tests/suite.py's table over several rounds: what docs/performance.md's table is read from."""

from __future__ import annotations

from tests.support import load_tests_module


def _suite():
    return load_tests_module("suite"), load_tests_module("drivers").Result


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip("|").split("|")]


def _columns(text: str) -> list[str]:
    return _cells(text.splitlines()[0])


def _rows(text: str) -> list[list[str]]:
    return [_cells(line) for line in text.splitlines()[2:]]


def test_each_ratio_is_the_median_of_the_rounds_own_ratios_with_their_range():
    suite, Result = _suite()

    def rounds(*rps_p99: tuple[float, float]) -> list[list[Result]]:
        return [[Result("notebook /mutate", rps, 10.0, p99, requests=100, cpu_us=rps / 10)] for rps, p99 in rps_p99]

    # the no-op has a slow round where quartermaster has a fast one: the median of the three rounds' ratios
    # (0.5, 0.5, 2.0 -> 0.5) differs from the ratio of the two medians (1000 / 1000 = 1.0)
    results = {"qm": rounds((500, 30.0), (1000, 10.0), (1000, 20.0)),
               "noop": rounds((1000, 5.0), (2000, 5.0), (500, 5.0)),
               "noop-uvloop": rounds((1000, 5.0), (1000, 5.0), (1000, 5.0))}
    text = suite.table(results)
    (row,) = _rows(text)
    cell = dict(zip(_columns(text), row))
    assert cell["req/s"] == "1000" and cell["no-op req/s"] == "1000"  # medians of each server's rounds
    assert cell["ratio"] == "0.50" and cell["ratio range"] == "0.50-2.00"
    assert cell["ratio uv"] == "1.00"
    assert cell["p99 ms"] == "20.0" and cell["p99 range"] == "10.0-30.0"
    assert cell["CPU us"] == "100"


def test_one_round_keeps_the_single_run_columns_and_open_loops_have_no_ratio():
    suite, Result = _suite()
    one = {name: [[Result("plain /mutate", rps, 1.0, 2.0, requests=10),
                   Result("open loop 1000 req/s /mutate", 500, 1.5, 4.0, requests=10)]]
           for name, rps in (("qm", 300), ("noop", 400), ("noop-uvloop", 600))}
    text = suite.table(one)
    columns = _columns(text)
    assert "ratio range" not in columns and "p99 range" not in columns and len(columns) == 13
    plain, loop = (dict(zip(columns, row)) for row in _rows(text))
    assert plain["ratio"] == "0.75" and plain["ratio uv"] == "0.50" and plain["CPU us"] == "-"
    assert loop["ratio"] == "-" and loop["p99 ms"] == "4.0"


def test_the_clients_own_lateness_is_one_line_per_rate_with_each_servers_median():
    suite, Result = _suite()

    def rounds(*late: float | None) -> list[list[Result]]:
        # per round: a wrk case, then the open loop's two rows (the same run: the same lateness on both)
        return [[Result("plain /mutate", 100, 1.0, 2.0),
                 Result("open loop 1000 req/s /mutate", 500, 1.0, 3.0, client_late_p99_ms=value),
                 Result("open loop 1000 req/s /validate", 500, 1.0, 3.0, client_late_p99_ms=value),
                 Result("open loop 1000 req/s (aiohttp client) /mutate", 500, 1.0, 3.0),
                 Result("open loop 1000 req/s (aiohttp client) /validate", 500, 1.0, 3.0)] for value in late]

    results = {"qm": rounds(1.0, 3.0, 1.4), "noop": rounds(2.0, 2.0, 9.0), "noop-uvloop": rounds(None, None, None)}
    # the aiohttp client measures no lateness of its own, and a server with none measured is left out
    assert suite.client_lateness(results) == "open loop 1000 req/s: the client's own lateness, p99 ms: qm 1.4, noop 2.0"


def test_the_open_loops_tail_is_counted_round_by_round_against_the_target():
    """Each round's p99 is its worse endpoint's; the line counts the rounds within 5 ms, per server and rate."""
    suite, Result = _suite()

    def rounds(*p99s: tuple[float, float]) -> list[list[Result]]:
        return [[Result("open loop 1000 req/s /mutate", 500, 1.0, mutate), Result("open loop 1000 req/s /validate", 500,
                                                                                 1.0, validate)]
                for mutate, validate in p99s]

    results = {"qm": rounds((4.0, 6.0), (3.0, 2.0), (5.0, 4.9)), "noop": rounds((1.0, 1.5), (1.1, 1.2), (30.0, 1.0))}
    assert suite.tail_rounds(results) == (
        "open loop 1000 req/s: rounds with p99 <= 5 ms (each round's p99, sorted): qm 2/3 (3.0, 5.0, 6.0); "
        "noop 2/3 (1.2, 1.5, 30.0)")


def test_cases_picks_the_named_throughput_cases_in_the_suites_order():
    suite, _ = _suite()
    picked = suite.selected_cases(["q10k-validate", "gpu-mutate"])
    assert [suite.case_name(endpoint, key) for _, endpoint, key in picked] == ["gpu-mutate", "q10k-validate"]
    assert len(suite.selected_cases(None)) == len(suite.CASES)
    files = {key: None for _, _, key in suite.CASES}
    assert len(suite.throughput_runs(files, 1.0, ["gpu-mutate"])) == 1  # no mixed saturation unless named
    assert len(suite.throughput_runs(files, 1.0, ["gpu-mutate", "mixed"])) == 2
    assert len(suite.throughput_runs(files, 1.0)) == len(suite.CASES) + 1


def test_cases_refuses_a_name_it_does_not_know():
    import argparse

    import pytest
    suite, _ = _suite()
    assert suite._case_names("gpu-validate, mixed") == ["gpu-validate", "mixed"]
    with pytest.raises(argparse.ArgumentTypeError, match="unknown case gpu-valid"):
        suite._case_names("gpu-valid")
