"""A module that takes a second and a half to import (for the sandbox's preload test)."""

import time

time.sleep(1.5)

IMPORTED_AT = time.time()
