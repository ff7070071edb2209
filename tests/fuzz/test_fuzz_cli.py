"""Fuzz of the command line: argv lists made of quotatop's own flags, subcommands and
choices (read off the parser, so a new flag is fuzzed the day it is added) mixed with
hostile values.

The parser's answer is a Namespace, or (docs/flags: quotatop/flags.py OneLineParser)
exit code 2 with exactly one line on stderr, ``quotatop: ...``; ``--help`` and
``--version`` exit 0. Never another exception: argparse lets any exception a ``type=``
function raises other than ValueError/TypeError/ArgumentTypeError through as a
traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
from functools import cache

from hypothesis import example, given
from hypothesis import strategies as st

from fuzz.strategies import NUMBER_WORDS, fuzz, hostile_text, hostile_words, one_line
from quotatop.cli import build_parser
from quotatop.collectors.errors import UserError


@cache
def _vocabulary() -> tuple[list[str], list[str], list[str]]:
    """(subcommands, option strings, choice values) of every parser in the tree."""
    commands: list[str] = []
    options: set[str] = set()
    choices: set[str] = set()
    todo = [build_parser()]
    while todo:
        parser = todo.pop()
        for action in parser._actions:
            options.update(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                commands.extend(action.choices)
                todo.extend(action.choices.values())
            elif action.choices:
                choices.update(str(c) for c in action.choices)
    return commands, sorted(options), sorted(choices)


def _words() -> st.SearchStrategy[str]:
    commands, options, choices = _vocabulary()
    # Flags that print and exit 0 are kept rare: they end parsing before the rest.
    flags = [o for o in options if o not in ("-h", "--help", "--version")]
    values = st.sampled_from([*NUMBER_WORDS, "demo", "slurm", "replay", "x.toml", "-", "--",
                              "=", "-1", "--=", "-x", "--no-such-flag"])
    return st.one_of(
        st.sampled_from(commands), st.sampled_from(flags), st.sampled_from(flags),
        st.sampled_from(flags).flatmap(lambda f: values.map(lambda v: f"{f}={v}")),
        st.sampled_from(choices) if choices else st.nothing(),
        values, hostile_words, hostile_text,
        st.just("--help"), st.just("--version"),
        # argv as Linux hands it over: invalid UTF-8 arrives as lone surrogates.
        st.binary(max_size=6).map(lambda b: b.decode("utf-8", "surrogateescape")),
    )


argvs = st.lists(_words(), max_size=8)


@fuzz()
@given(argvs)
def test_any_argv_parses_or_is_one_line_and_exit_2(argv: list[str]) -> None:
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            build_parser().parse_args(argv)
    except SystemExit as exc:
        if exc.code == 0:  # --help, --version
            assert out.getvalue() and not err.getvalue(), (argv, out.getvalue()[:200])
            return
        assert exc.code == 2, (argv, exc.code)
        text = err.getvalue()
        assert text.startswith("quotatop: ") and text.endswith("\n"), (argv, text)
        body = text[:-1]
        assert body.splitlines() == [body], f"not one line: {text!r}"
        assert "Traceback" not in text and body.isprintable(), (argv, text)
        return
    assert not err.getvalue(), (argv, err.getvalue())


def test_found_an_integer_flag_past_a_float_is_exit_2() -> None:
    # Found by this suite: flags.check raised OverflowError for `--frames 9...9` (400
    # digits), which argparse does not catch: a traceback instead of exit 2.
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.suppress(SystemExit):
        build_parser().parse_args(["record", "--source", "demo", "--out", "x",
                                   "--frames", "9" * 400])
    assert err.getvalue().startswith("quotatop: record: argument --frames: ")


def test_found_an_argument_with_a_line_break_is_still_one_line() -> None:
    # Found by this suite: "unrecognized arguments" quotes argv as it is, so a newline
    # (or a lone surrogate from invalid UTF-8) in one broke the one-line rule.
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.suppress(SystemExit):
        build_parser().parse_args(["--refresh", "2", "a\nb", "\udcff"])
    text = err.getvalue()
    assert text.count("\n") == 1 and text[:-1].isprintable(), text


# ---- the values of --at and --retention --------------------------------------------------
at_texts = st.one_of(
    hostile_words, hostile_text,
    st.sampled_from(["0001-01-01", "9999-12-31T23:59:59", "0001-01-01T00:00:00+14:00",
                     "24:00", "23:59:60", "12:00", "+1e308s", "+-1s", "+nan", "+", "1e308",
                     "-1e308", "nan", "2026-02-30", "T12:00"]),
    st.from_regex(r"\A[+]?\d{1,30}(\.\d{1,5})?[smhd]?\Z"),
    st.from_regex(r"\A\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2})?([+-]\d{2}:\d{2}|Z)?)?\Z"),
)
# A recording's first frame time: any float the file holds (recording.py reads REAL t).
starts = st.sampled_from([1.7e9, 0.0, -1.0, 1e11, 1e20, -1e20]) | st.floats()


@fuzz()
@given(at_texts, starts)
@example("0001-01-01", 1.7e9)  # the reproducer handed over: year 0 after astimezone()
def test_at_is_a_time_or_one_user_error(text: str, start: float) -> None:
    from quotatop.commands.at_flag import parse_at

    try:
        got = parse_at(text, start, start)
    except UserError as exc:
        one_line(str(exc))
        return
    assert isinstance(got, float), got


@fuzz()
@given(at_texts)
def test_retention_is_a_finite_duration_or_a_value_error(text: str) -> None:
    from quotatop.recording.store import MAX_DURATION, parse_duration

    try:
        got = parse_duration(text)
    except ValueError as exc:  # record turns it into a UserError naming --retention
        one_line(str(exc))
        return
    assert math.isfinite(got) and 0 < got <= MAX_DURATION, (text, got)
