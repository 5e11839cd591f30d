"""The HTML report of a run (`nodewright simulate --report`)."""

from nodewright.sim.report.html import render_report

__all__ = ["render_report"]
