"""A plugin written against an API Ragloom does not have: importing it fails."""

from ragloom_app.plugins import ragloom_hookimpl_that_does_not_exist  # noqa: F401
