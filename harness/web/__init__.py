"""The HTTP face of the fleet: health, the events API, and (mounted later) channel webhooks.

from harness.web import create_app, serve
"""

from harness.web.app import create_app, serve
from harness.web.deps import WebContext, web_context

__all__ = ["WebContext", "create_app", "serve", "web_context"]
