"""The research tools the agents call: ``web_search`` (Tavily) and ``web_fetch`` (full-page reader)."""
