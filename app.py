"""Start the Ragloom web UI: ``python app.py`` (the same as ``ragloom serve``)."""

import sys

from ragloom_app.cli import main

if __name__ == "__main__":
    sys.exit(main(["serve", *sys.argv[1:]]))
