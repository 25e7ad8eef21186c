"""The marker that says a generated dataset is whole.

Written last, through a temporary file, it records the parameters the data was generated with:
a rerun with the same parameters does nothing, while a different request, or a run interrupted
before the marker, generates the data again.
"""

import json
import os


def is_complete(marker, params):
    """Whether `marker` records exactly `params`."""
    try:
        with open(marker) as f:
            return json.load(f) == params
    except (OSError, ValueError):
        return False


def clear(marker):
    """Removes the marker before the data is touched, so an interrupted run is never whole."""
    if os.path.exists(marker):
        os.remove(marker)


def mark_complete(marker, params):
    """Writes the marker (atomically: a crash leaves none or a whole one)."""
    tmp = marker + ".tmp"
    with open(tmp, "w") as f:
        json.dump(params, f)
        f.write("\n")
    os.replace(tmp, marker)
