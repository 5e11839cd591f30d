"""LOG_OUTPUT_PATHS and LOG_ERROR_OUTPUT_PATHS, as zap's OutputPaths and ErrorOutputPaths
(Karpenter's pkg/operator/logging): log lines go to every output path (stdout, stderr or
files, appended to); the logger's own failures go to the error output paths."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodewright.operator import main
from nodewright.operator.config import OperatorConfig
from nodewright.operator.logs import configure


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
        if handler not in handlers:
            handler.close()
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("cannot render")


def test_log_lines_go_to_every_output_path(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    log_file = tmp_path / "nodewright.log"
    log_file.write_text('{"earlier": "line"}\n')
    configure("info", outputs=("stdout", str(log_file)))

    logging.getLogger("nodewright.test").info("launched nodeclaim",
                                              extra={"NodeClaim": "default-x7k2p"})

    from_stdout = json.loads(capsys.readouterr().out)
    earlier, from_file = log_file.read_text().splitlines()
    assert earlier == '{"earlier": "line"}'  # appended to, not replaced
    assert json.loads(from_file)["message"] == from_stdout["message"] == "launched nodeclaim"
    assert from_stdout["NodeClaim"] == {"name": "default-x7k2p"}


def test_the_loggers_own_failures_go_to_the_error_output_paths(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    errors = tmp_path / "errors.log"
    configure("info", outputs=("stdout",), error_outputs=(str(errors),))

    logging.getLogger("nodewright.test").error("%s", Unprintable())
    logging.getLogger("nodewright.test").error("an ordinary error")

    (failure,) = errors.read_text().splitlines()
    entry = json.loads(failure)
    assert entry["message"] == "could not write a log record"
    assert "RuntimeError: cannot render" in entry["error"]
    assert entry["record"]["logger"] == "nodewright.test"
    # ERROR-level lines are log lines: they go to the output paths, as zap writes them.
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line)["message"] == "an ordinary error"


def test_an_output_file_that_cannot_be_opened_stops_the_start(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no-such-dir" / "nodewright.log"
    config = OperatorConfig(cluster_name="demo", log_output_paths=(str(missing),))

    assert main.run(config) == 2

    error = capsys.readouterr().err
    assert f"cannot open {missing}" in error and "LOG_OUTPUT_PATHS" in error
