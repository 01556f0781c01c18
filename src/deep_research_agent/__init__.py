"""deep-research-agent: a LangGraph deep research agent whose every cited claim is checked against the
text it cites. ``graph.make_graph`` is the server's entry point; the subpackages name the architecture.
"""
