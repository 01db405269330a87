"""Where the tests read from: the repository, the shared design docs and gg's third-party fixtures
beside it (`../shared`, read there, never copied), and the authored stream fixtures."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SHARED = REPO.parent / "shared"
GG_FIXTURES = SHARED / "fixtures" / "gg"
STREAMS = TESTS / "fixtures" / "streams"
