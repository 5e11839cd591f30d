"""One `nodewright simulate` invocation: check the inputs, run (twice with `--compare`),
print the timeline, the expectations and the summary, write the JSON and the report.

Exit codes: 0 every expectation held, 1 one failed, 2 the scenario (or a `--compare`
manifest, or an output path) is invalid, in which case nothing is run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TextIO

from nodewright.api.problems import Problem
from nodewright.sim.collector import tuned_collector
from nodewright.sim.compare import Comparison
from nodewright.sim.jsonout import write_json
from nodewright.sim.loading import load_scenario
from nodewright.sim.progress import Progress
from nodewright.sim.reader import format_problem
from nodewright.sim.result import EXIT_INVALID, RunResult
from nodewright.sim.runner import run_scenario
from nodewright.sim.snapshot.outcome import WhatItWouldDo, run_what_if
from nodewright.sim.snapshot.outcome_html import section as outcome_section
from nodewright.sim.snapshot.takeover import take_over
from nodewright.sim.timeline import TimelineEvent
from nodewright.sim.whatif import load_replacements, reference_problems, with_replacements

REPORT_EXTRA_MISSING = "--report needs the report extra: pip install 'nodewright[report]'"


class ReportRenderer(Protocol):
    def __call__(self, result: RunResult, comparison: Comparison | None = None,
                 extra: Sequence[str] = ()) -> str: ...


@dataclass(frozen=True)
class SimulationRequest:
    scenario: str
    compare: tuple[str, ...] = ()
    report: Path | None = None
    json_path: Path | None = None
    quiet: bool = False


def simulate(request: SimulationRequest, out: TextIO, err: TextIO) -> int:
    with tuned_collector():
        return _simulate(request, out, err)


def _simulate(request: SimulationRequest, out: TextIO, err: TextIO) -> int:
    scenario, problems = load_scenario(request.scenario)
    replacements, found = load_replacements(request.compare) if request.compare else ([], [])
    problems = problems + found
    if scenario is not None and replacements:
        problems.extend(reference_problems(scenario, replacements))
    problems.extend(_output_problems(request))
    if _print_problems(problems, out, err) or scenario is None:
        return EXIT_INVALID
    render_report = _report_renderer() if request.report is not None else None
    if request.report is not None and render_report is None:
        err.write(f"nodewright simulate: {REPORT_EXTRA_MISSING} (matplotlib is not "
                  "installed); nothing was run\n")
        return EXIT_INVALID

    progress = Progress.for_terminal(err, request.quiet)

    def show(event: TimelineEvent) -> None:
        if request.quiet and event.kind != "expect":
            return
        progress.clear()
        out.write(event.format() + "\n")
        out.flush()

    # A scenario that starts from a running fleet (a cluster's snapshot) is also told as
    # what the controllers would do to that cluster.
    from_fleet = bool(scenario.node_claims or scenario.bound_pods)
    outcomes: list[WhatItWouldDo] = []
    if from_fleet:
        result, outcome = run_what_if(scenario, on_event=show, progress=progress)
        outcomes.append(outcome)
    else:
        result = run_scenario(scenario, on_event=show, progress=progress)
    comparison = None
    if replacements:
        variant, notes = with_replacements(scenario, replacements)
        variant, taken = take_over(variant, replacements)
        notes = [*notes, *taken]
        progress.label = "what-if"
        if from_fleet or taken:
            other, other_outcome = run_what_if(variant, label="what-if", progress=progress)
            outcomes.append(other_outcome)
        else:
            other = run_scenario(variant, label="what-if", progress=progress)
        comparison = Comparison(result, other, request.compare, tuple(notes))
    progress.clear()
    _print_outcome(result, comparison, out)
    titles = ["What it would do to this cluster",
              f"With {', '.join(request.compare)} instead"]
    for title, outcome in zip(titles, outcomes, strict=False):
        lines = outcome.lines()
        lines[1] = f"{title}:"
        out.write("\n".join(lines) + "\n")
    extra = ({"whatItWouldDo": [o.to_dict() for o in outcomes]} if outcomes else None)
    if request.json_path is not None:
        write_json(request.json_path, result, comparison, extra)
        out.write(f"JSON written to {request.json_path}\n")
    if request.report is not None and render_report is not None:
        sections = [outcome_section(o, t) for t, o in zip(titles, outcomes, strict=False)]
        _write(request.report, render_report(result, comparison, sections))
        out.write(f"Report written to {request.report}\n")
    return result.exit_code


def _report_renderer() -> ReportRenderer | None:
    """The report's renderer, or None without the `report` extra (matplotlib). Imported
    only when a report is wanted: the controller image does not install matplotlib, and it
    takes a while to import."""
    try:
        from nodewright.sim.report import render_report
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] != "matplotlib":
            raise
        return None
    return render_report


def _print_problems(problems: Sequence[Problem], out: TextIO, err: TextIO) -> bool:
    """Print every problem; True when one is an error (the scenario cannot run)."""
    ordered = sorted(problems, key=lambda p: (p.file, p.line, p.path, p.message))
    for problem in ordered:
        out.write(format_problem(problem) + "\n")
    errors = sum(1 for p in problems if p.severity == "error")
    if errors:
        err.write(f"nodewright simulate: {errors} error(s) found; nothing was run\n")
    return errors > 0


def _output_problems(request: SimulationRequest) -> list[Problem]:
    problems = []
    for option, path in (("--report", request.report), ("--json", request.json_path)):
        if path is not None and path.is_dir():
            problems.append(Problem(str(path), 0, "", "", option, "is a directory, not a file"))
    return problems


def _print_outcome(result: RunResult, comparison: Comparison | None, out: TextIO) -> None:
    lines = ["", "Expectations:"]
    lines.extend(f"  {outcome.describe()}" for outcome in result.expectations)
    if not result.expectations:
        lines.append("  (the scenario has no expect steps)")
    lines.extend(f"  error: {error}" for error in result.errors)
    lines.append("")
    verdict = "every expectation held" if result.passed else "FAILED"
    lines.append(f"Summary of {result.scenario.name} (seed {result.scenario.seed}): {verdict}")
    lines.extend(result.summary.lines())
    if result.violations:
        lines.append("Violations:")
        lines.extend(f"  {violation.kind}: {violation.message}"
                     for violation in result.violations)
    if result.controller_errors:
        lines.append("Controller errors (retried; the result may show what they held up):")
        lines.extend(f"  {error.describe()}" for error in result.controller_errors)
    if comparison is not None:
        lines.append("")
        lines.extend(comparison.lines())
        held = sum(1 for outcome in comparison.variant.expectations if outcome.held)
        lines.append(f"  (the what-if run: {held} of {len(comparison.variant.expectations)} "
                     "expectations held; the exit status is the scenario's as written)")
    out.write("\n".join(lines) + "\n")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
