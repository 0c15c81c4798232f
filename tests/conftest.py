"""Settings every test shares: the hypothesis profiles of the property-based tests.

By default (profile ``ragloom``) each property test runs the same examples every time,
derived from the test itself: a red run in CI is a real regression, reproduced by running
the test again, never a new random find that blocks an unrelated change. To search for new
failures, run ``pytest tests --hypothesis-profile=explore`` (random examples; 1,000 of them
where a test does not choose its own number) and turn what it finds into a test of its own.
"""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("ragloom", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False, max_examples=1000)
settings.load_profile("ragloom")
