"""Fixtures of the security tests: the live web surface and the outbound-connection recorder
(tests/helpers/web_surface.py), shared by test_web_surface.py and test_web_uploads.py."""

from tests.helpers.web_surface import outbound, surface

__all__ = ["outbound", "surface"]
