"""The research tools the agents call: ``web_search`` (Tavily, SearXNG, arXiv, Wikipedia, PubMed, OpenAlex:
``search_backends/``), ``web_fetch`` (full-page reader),
``corpus_search`` and ``corpus_read`` (the local corpora), the deployment's drop-in tools (``CustomTool``,
``custom``), and the classified errors every tool hands the model instead of raising.
"""

from .corpus import build_corpus_tools
from .custom import CustomTool
from .errors import ClassifiedToolErrorsMiddleware
from .fetch import build_web_fetch_tool
from .search import build_web_search_tool

__all__ = [
    "ClassifiedToolErrorsMiddleware",
    "CustomTool",
    "build_corpus_tools",
    "build_web_fetch_tool",
    "build_web_search_tool",
]
