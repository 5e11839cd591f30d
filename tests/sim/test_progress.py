"""The status line of long runs: drawn on a terminal only, and erased before output."""

from __future__ import annotations

import io

from nodewright.sim.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_sees_virtual_time_and_counts_then_a_clean_line() -> None:
    stream = Terminal()
    progress = Progress.for_terminal(stream, quiet=False)

    progress.update(3725.0, 42, 3, 7)
    progress.clear()

    assert stream.getvalue() == (
        "\r\x1b[2Kvirtual time 01:02:05, 42 events, 3 nodes, 7 pending pods\r\x1b[2K")


def test_pipes_and_quiet_runs_get_no_progress() -> None:
    pipe, terminal = io.StringIO(), Terminal()
    for progress in (Progress.for_terminal(pipe, quiet=False),
                     Progress.for_terminal(terminal, quiet=True)):
        progress.update(10.0, 1, 0, 0)
        progress.clear()

    assert pipe.getvalue() == terminal.getvalue() == ""
