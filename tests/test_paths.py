"""Every path argument of every command is spelt one way (issue 67): `~`
expanded, `.` and `..` collapsed, trailing separators dropped; the
arguments are found in the parsers themselves, so a new one is covered."""

import argparse

import pytest

from keras_bert.paths import file_output, normal_path
from tests.test_doc_references import COMMANDS, _parser

pytestmark = pytest.mark.backend_independent

# The arguments that take text naming no path. Any other one is a path and
# must go through `normal_path` (or `file_output`, for a file to write).
NOT_PATHS = {"--set", "--tpu", "--hidden_activation"}


@pytest.mark.parametrize(
    "given, expected",
    [
        ("pout/hf/", "pout/hf"),
        ("./runs/./a/../b//", "runs/b"),
        ("~/runs/hf/", "{home}/runs/hf"),
        ("/", "/"),
        ("gs://bucket/run/", "gs://bucket/run"),
        ("gs://bucket/a/../b", "gs://bucket/a/../b"),  # Object names, not folders.
        ("random:bert_tiny", "random:bert_tiny"),
        ("", ""),  # Not the current folder.
    ],
)
def test_normal_path(given, expected, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert normal_path(given) == expected.format(home=tmp_path)


def path_arguments(command, monkeypatch):
    """`(parser, its arguments that take text and are not NOT_PATHS)`."""
    parser = _parser(command, monkeypatch)
    monkeypatch.undo()  # argparse's own parse_args back, for the tests to call.
    arguments = [
        action
        for action in parser._actions
        if action.nargs != 0
        and action.choices is None
        and action.type in (None, normal_path, file_output)
        and not set(action.option_strings) & NOT_PATHS
    ]
    assert arguments, f"{command}: no path argument found"
    return parser, arguments


def parse(parser, tested, given):
    """`tested`'s parsed value from `given`, `(flag, value)` pairs (values
    alone for a positional), with a placeholder for every other argument
    the parser requires."""
    required = [a for a in parser._actions if a.required and a is not tested]
    required += [
        group._group_actions[0]
        for group in parser._mutually_exclusive_groups
        if group.required and tested not in group._group_actions
    ]
    argv = [arg for a in required for arg in (a.option_strings[0], next(iter(a.choices or "x")))]
    if tested.option_strings:
        argv += [arg for pair in given for arg in pair]
    else:  # The positionals before it get a placeholder.
        positionals = [a for a in parser._actions if not a.option_strings]
        argv += ["x"] * positionals.index(tested) + list(given)
    return getattr(parser.parse_args(argv), tested.dest)


def repeatable(action):
    return isinstance(action, argparse._AppendAction)


def name(command, action):
    return f"{command} {action.option_strings[0] if action.option_strings else action.dest}"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_path_argument_is_spelt_one_way(command, tmp_path, monkeypatch, capsys):
    parser, arguments = path_arguments(command, monkeypatch)
    monkeypatch.setenv("HOME", str(tmp_path))
    for action in arguments:
        assert action.type in (normal_path, file_output), f"{name(command, action)}: not normalised"
        given = ["~/runs/./a/../out/", "gs://bucket/out/"]
        if action.type is file_output:
            # A trailing separator names a folder: refused, not dropped.
            with pytest.raises(SystemExit) as exit_:
                parse(parser, action, [(action.option_strings[0], given[0])])
            assert exit_.value.code == 2
            assert capsys.readouterr().err.endswith(
                f"argument {action.option_strings[0]}: {given[0]}: ends in a separator, so "
                "names a folder; give a file name\n"
            )
            given = [path.rstrip("/") for path in given]
        if not action.option_strings:
            parsed = [[parse(parser, action, [path]) for path in given]]
        elif repeatable(action):  # `--input` of data and vocab: every value kept.
            parsed = [parse(parser, action, [(action.option_strings[0], p) for p in given])]
        else:  # Under each of its names (`--output`, `--output_dir`).
            parsed = [
                [parse(parser, action, [(flag, path)]) for path in given]
                for flag in action.option_strings
            ]
        expected = [f"{tmp_path}/runs/out", "gs://bucket/out"]
        assert parsed == [expected] * len(parsed), name(command, action)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_path_flag_given_twice_is_refused(command, monkeypatch, capsys):
    # Issue 67 item 13: `--output A --output_dir B` kept B without a word.
    parser, arguments = path_arguments(command, monkeypatch)
    for action in [a for a in arguments if a.option_strings and not repeatable(a)]:
        for second in action.option_strings:
            with pytest.raises(SystemExit) as exit_:
                parse(parser, action, [(action.option_strings[0], "a"), (second, "./b")])
            assert exit_.value.code == 2, name(command, action)
            assert capsys.readouterr().err.endswith(
                f"argument {'/'.join(action.option_strings)}: a and b both given; give one\n"
            ), name(command, action)
