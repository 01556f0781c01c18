"""The research tools the agents call: ``web_search`` (Tavily) and ``web_fetch`` (full-page reader),
and the classified errors every tool hands the model instead of raising.
"""

from .._exports import lazy_exports

__all__, __getattr__ = lazy_exports(
    __name__,
    {
        "ClassifiedToolErrorsMiddleware": "errors",
        "ToolFailure": "errors",
        "build_web_fetch_tool": "fetch",
        "build_web_search_tool": "search",
    },
)
