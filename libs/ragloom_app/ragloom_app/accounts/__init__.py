"""Accounts: users with argon2id passwords, login sessions, API keys (see docs/users.md)."""

from ragloom_app.accounts.store import (
    AccountError,
    AccountStore,
    ApiKeyInfo,
    LoginRefused,
    User,
)

__all__ = ["AccountError", "AccountStore", "ApiKeyInfo", "LoginRefused", "User"]
