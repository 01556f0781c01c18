"""The assist: everything that exists only to make a small model follow the research loop, in one switchable place.

A frontier model gets the prompts and tool results it was designed for; a small one also gets, from here:
- ``first_step``: the line after a unit's brief naming its first call (``FirstStepMiddleware``);
- ``next_step``: the lines that end search results, pages and ``read_file``'s web-address error on the next
  step (``NextStepMiddleware``, a tool-result decorator: the tools return plain results);
- ``examples``: the worked example calls and answers that nudges and bounces end on (the orchestrator's
  no-tool-call nudge, the findings gate's bounces);
- ``repair``: a one-item list written as a tool's arguments runs as the list (text tool calls);
- ``routing``: tables and comparisons go to research without asking a small router.

``switch`` decides, per agent, whether it is on (``model_assist``: auto | on | off); the graph wires the parts
of an agent whose assist is on, and the ``run_start`` event says per agent whether it is on and why. What
reaches every model (text tool calls, a ``TOOL ERROR`` with an example of the arguments, reasoning stripped,
output caps, copied placeholders refused, the honest ``no_tool_calls`` end) lives with its own feature.
"""

from .examples import UnitFirstCall, delegation_example, page_example
from .first_step import FirstStepMiddleware
from .next_step import NextStepMiddleware
from .repair import one_item_list
from .routing import asks_for_research_or_comparison
from .switch import decide_assist, hosted_models, is_small_model

__all__ = [
    "FirstStepMiddleware",
    "NextStepMiddleware",
    "UnitFirstCall",
    "asks_for_research_or_comparison",
    "decide_assist",
    "delegation_example",
    "hosted_models",
    "is_small_model",
    "one_item_list",
    "page_example",
]
