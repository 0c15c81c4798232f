"""Accounts: users with argon2id passwords, login sessions, API keys (see docs/users.md)."""

from ragloom_app.accounts.identity import AccountError, User
from ragloom_app.accounts.keys import ApiKeyInfo
from ragloom_app.accounts.store import AccountStore, LoginRefused

__all__ = ["AccountError", "AccountStore", "ApiKeyInfo", "LoginRefused", "User"]
