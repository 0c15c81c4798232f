"""Pages of the app: the logic behind each screen, usable without a UI."""

from ragloom_app.pages.chat import ChatPage

__all__ = ["ChatPage"]
