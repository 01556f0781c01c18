"""The evaluation harness: run a question suite through any agent server and score what each run delivered.

``python -m deep_research_agent.evaluation`` (``./run.sh eval``) runs a suite (``suite.py``) through a
running server with ``langgraph_sdk`` (``runner.py``), measures each run from its own events and thread
state (``metrics.py``), adds a judge model's scores when one is configured (``judge.py``), and writes a
versioned scorecard (``scorecard.py``) with a readable Markdown report; ``compare`` holds two scorecards
side by side with a paired test (``compare.py``), and ``cassette`` records and replays a run's model and
search traffic (``cassette.py``). It is a client of the server, like ``cli``, and sits on top of it.
"""

__all__ = ["cassette", "compare", "judge", "metrics", "runner", "scorecard", "suite"]
