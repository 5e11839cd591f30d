"""The `nodewright` command's entry: every sub-command registered under its summary, and
`--help`/`--version` answered without importing what the sub-commands need (pydantic,
boto3, lightkube, the simulator), which is what keeps them instant."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nodewright import __version__
from nodewright.cli import COMMANDS, build_parser, main

HEAVY = ("pydantic", "boto3", "botocore", "lightkube", "yaml", "nodewright.sim",
         "nodewright.api", "nodewright.scheduling", "nodewright.cloud")


def imported_after(argv: list[str]) -> list[str]:
    """The heavy modules loaded once `nodewright ARGV` has run (in a fresh interpreter)."""
    code = (
        "import contextlib, io, sys\n"
        "from nodewright.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        f"    main({argv!r})\n"
        "print('\\n'.join(sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    return [name for name in done.stdout.splitlines()
            if name in HEAVY or name.startswith(tuple(f"{heavy}." for heavy in HEAVY))]


@pytest.mark.parametrize("argv", [["--help"], ["--version"], []])
def test_help_and_version_import_no_sub_command(argv: list[str]) -> None:
    assert imported_after(argv) == []


def test_a_command_imports_only_what_it_needs() -> None:
    assert not [m for m in imported_after(["crds", "--help"])
                if m.startswith(("boto3", "nodewright.sim", "lightkube"))]


def test_version_names_the_package(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out.strip() == f"nodewright {__version__}"


def test_every_command_is_listed_under_its_summary() -> None:
    parser = build_parser()
    choices = parser._subparsers._group_actions[0]  # type: ignore[union-attr]
    listed = {action.dest: action.help for action in choices._choices_actions}
    assert listed == {name: summary for name, (_, summary) in COMMANDS.items()}
    for name in COMMANDS:  # each full parser parses its own --help
        with pytest.raises(SystemExit):
            parser.parse_args([name, "--help"])
