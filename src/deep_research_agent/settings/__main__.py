"""``python -m deep_research_agent.settings markdown|env-example``: print a generated settings document."""

import sys

from .docgen import main

sys.exit(main(sys.argv[1:]))
