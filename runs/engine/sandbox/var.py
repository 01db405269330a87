"""Where the sandbox keeps what it builds and generates: var/sandbox/ under the console's VAR_DIR."""

from pathlib import Path

from django.conf import settings

REPO = Path(__file__).resolve().parents[3]


def var_dir():
    try:
        return Path(settings.VAR_DIR)
    except Exception:  # used outside Django too (bench/sandbox)
        return REPO / "var"


def sandbox_dir():
    return var_dir() / "sandbox"
