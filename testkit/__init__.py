"""Test support shared by the tests and the benchmarks: stand-ins for what the product talks to, and scripted scenarios.

Contract:
- ``tests/`` and ``bench/`` import from here; nothing here imports ``tests`` (``tests/test_testkit.py``
  enforces it, for bench/ too), so a benchmark never loads the test suite or its fixtures;
- every stand-in serves real sockets on loopback only (the scripted model, the web and Tavily API, the MCP
  servers, the sandbox service, ``langgraph dev`` itself) and stops with its context manager or ``stop()``;
- ``scenarios`` builds the scripted model's scenarios for the product's agents (``scripted_model``
  documents the scenario format);
- it is not part of the product: the wheel ships ``src/deep_research_agent`` only.
"""
