"""The research tools the agents call: ``web_search`` (Tavily), ``web_fetch`` (full-page reader),
``corpus_search`` and ``corpus_read`` (the local corpora), the deployment's drop-in tools (``CustomTool``,
``custom``), and the classified errors every tool hands the model instead of raising.
"""

from .._exports import lazy_exports

__all__, __getattr__ = lazy_exports(
    __name__,
    {
        "ClassifiedToolErrorsMiddleware": "errors",
        "CustomTool": "custom",
        "ToolFailure": "errors",
        "build_corpus_tools": "corpus",
        "build_web_fetch_tool": "fetch",
        "build_web_search_tool": "search",
    },
)
