"""The run lifecycle as the orchestrator carries it: four middleware, each owning one part, in one order.

Contract (``RunLifecycle``, outermost first, before every other middleware of the orchestrator):
- ``contained`` (``contained_calls.py``) wraps every model and tool call, so what fails inside them,
  the other parts' wrappers included, becomes the run's ``run_error`` rather than a traceback;
- ``opening`` (``opening.py``): its ``before_agent`` is the run's first node hook (``run_start``,
  admission, the thread's state); its wrappers take a resumed run over before the ledger saves anything;
- ``ledger`` (``ledger.py``) saves the run's ledger after each call that succeeded;
- ``closing`` (``closing.py``): its ``after_agent`` is the run's last node hook, since langchain runs
  ``after_agent`` hooks innermost first.
The parts share the ``run_error`` state key (``run_call.py``). Only ``opening`` and ``closing`` have node
hooks, one each, so the lifecycle costs a run two graph steps, as one middleware would.

A cancelled run ends without any of this (the server stops it mid-step), but ``contained`` drops its
stores so the pages it read do not stay in memory.
"""

from __future__ import annotations

from typing import NamedTuple

from .closing import RunClosingMiddleware
from .contained_calls import ContainedCallsMiddleware
from .ledger import RunLedgerMiddleware
from .opening import RunOpeningMiddleware


class RunLifecycle(NamedTuple):
    """The lifecycle's middleware in the order the orchestrator carries them: ``[*lifecycle, ...]``."""

    contained: ContainedCallsMiddleware
    opening: RunOpeningMiddleware
    ledger: RunLedgerMiddleware
    closing: RunClosingMiddleware
