"""Aegra's entry to the agent: the same ``make_graph(config)`` factory ``langgraph.json`` names.

Aegra takes graphs only as file paths and loads each file as a module of its own (``aegra_graphs.<id>``),
so ``deep_research_agent/graph.py``'s relative imports would fail there; this file imports the factory
absolutely instead.
"""

from deep_research_agent.graph import make_graph

__all__ = ["make_graph"]
