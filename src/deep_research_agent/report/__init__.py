"""The deliverable: ``submit_report`` and the report-related state of a run."""

from ..delivery.submit import ReportMiddleware, ReportState

__all__ = ["ReportMiddleware", "ReportState"]
