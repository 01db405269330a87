"""Settings for gg_console.

The embedded default needs nothing running: SQLite (WAL) under var/ and the in-memory channel
layer. DATABASE_URL switches to PostgreSQL and REDIS_URL to channels-redis (the scale path).
Production: set GG_CONSOLE_PRODUCTION=1 with DJANGO_SECRET_KEY and DJANGO_ALLOWED_HOSTS.
"""

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("GG_CONSOLE_VAR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)

PRODUCTION = os.environ.get("GG_CONSOLE_PRODUCTION") == "1"

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if PRODUCTION:
        raise RuntimeError("GG_CONSOLE_PRODUCTION=1 needs DJANGO_SECRET_KEY")
    # A per-checkout key kept under var/ so sessions survive restarts without a shared secret.
    key_file = VAR_DIR / "secret_key"
    if not key_file.exists():
        from django.core.management.utils import get_random_secret_key

        key_file.write_text(get_random_secret_key())
    SECRET_KEY = key_file.read_text().strip()

DEBUG = not PRODUCTION and os.environ.get("DJANGO_DEBUG", "1") == "1"
ALLOWED_HOSTS = [
    h.strip()
    for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",")
    if h.strip()
]
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "axes",
    "runs",
    "surfaces",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "gg_console.nul.RefuseNul",  # before anything looks a session, a name or a token up
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks
]

# Password guessing on the login form (django-axes): ten failures in a row for one username from one
# address lock that pair out for 15 minutes (429, the console's page); a success resets the count.
# `manage.py axes_reset_username NAME` lifts a lock at once. Only failures are recorded.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = 10
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_COOLOFF_TIME = timedelta(minutes=15)
AXES_RESET_ON_SUCCESS = True
AXES_DISABLE_ACCESS_LOG = True
AXES_LOCKOUT_CALLABLE = "gg_console.errors.locked_out"

ROOT_URLCONF = "gg_console.urls"
ASGI_APPLICATION = "gg_console.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": dj_database_url.parse(os.environ["DATABASE_URL"], conn_max_age=0, conn_health_checks=True)
             if os.environ.get("DATABASE_URL") else {"ENGINE": "django.db.backends.sqlite3", "NAME": VAR_DIR / "db.sqlite3"}}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # the embedded default, or sqlite:///PATH
    DATABASES["default"]["OPTIONS"] = {
        # WAL lets readers (pages, the feed) run while the write path appends;
        # IMMEDIATE + timeout make a busy database wait instead of failing.
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
    }
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Pooled connections (psycopg-pool), at most twelve per process. Django keeps persistent
    # connections per thread, and under Daphne each request runs in a thread of its own, so a kept
    # connection was never used again (PostgreSQL refused the scale bench's streams: "too many
    # clients"); without keeping any, every request and every consumer call connected afresh, a
    # backend forked each time, and under the scale bench WebSocket handshakes timed out behind them.
    # Health checks: a connection handed out is tried first (one empty query), so one that died in the
    # pool (the database restarted) is replaced instead of failing a request.
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {"min_size": 2, "max_size": 12, "timeout": 10}
else:
    raise ImproperlyConfigured(f"DATABASE_URL names a {DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]} "
                               "database; the console runs on PostgreSQL (postgres://...) or SQLite (sqlite:///PATH).")

# A live run with no record for this long reads "stale" (a stream that stopped without
# session_ended): GG_RUN_STALE_SECONDS, default five minutes.
RUN_STALE_SECONDS = int(os.environ.get("GG_RUN_STALE_SECONDS", "300"))

# Model prices (USD per million tokens of each class) over the defaults in runs/stream/prices.py:
# {"vendor/model": {"input": 3.0, "cached": 0.3, "output": 15.0, "reasoning": 15.0}}; "vendor/*"
# prices a whole vendor. Used where the stream carries no cost; README "Model prices".
GG_MODEL_PRICES = {}

REDIS_URL = os.environ.get("REDIS_URL", "")

# The built-in engine (README "The shell's confinement and the provider allowlists").
GG_WORKSPACE_QUOTA_BYTES = int(os.environ.get("GG_WORKSPACE_QUOTA_BYTES", 1024 ** 3))
# Files, directories and links a workspace may hold: each takes one of the host filesystem's inodes.
GG_WORKSPACE_MAX_ENTRIES = int(os.environ.get("GG_WORKSPACE_MAX_ENTRIES", 250_000))
# Environment variables a launch spec may name as provider.apiKeyEnv, besides any GG_PROVIDER_KEY_*.
GG_PROVIDER_KEY_ENVS = tuple(v.strip() for v in os.environ.get("GG_PROVIDER_KEY_ENVS", "").split(",") if v.strip())
# Hosts a provider.baseUrl may name (host or host:port, `*.example.com` for subdomains); empty: none.
GG_PROVIDER_HOSTS = tuple(h.strip().lower() for h in os.environ.get("GG_PROVIDER_HOSTS", "").split(",") if h.strip())
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py 8 reads with a 5 s socket timeout by default, which races channels-redis's
            # 5 s blocking receive and kills `runworker` listeners: read for longer than that.
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 30}],
                       # Consoles sharing one Redis keep apart by prefix (bench/scale uses its own).
                       "prefix": os.environ.get("GG_CHANNEL_PREFIX", "asgi")},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
CSRF_FAILURE_VIEW = "gg_console.errors.csrf_failure"  # the console's page, saying what to do
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "runs:list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)  # WhiteNoise warns on every request when it is missing
WHITENOISE_USE_FINDERS = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Uploads: an NDJSON import or a workspace zip may be large; the ingest reads it as a stream.
DATA_UPLOAD_MAX_MEMORY_SIZE = 64 * 1024 * 1024
# The launch form has some 55 inputs a profile: Django's 1,000 refused one of 19 profiles. Bodies are
# bounded in bytes above (and by GG_MAX_REQUEST_BYTES), so the count is raised to about 180 profiles.
DATA_UPLOAD_MAX_NUMBER_FIELDS = 10_000
FILE_UPLOAD_MAX_MEMORY_SIZE = 8 * 1024 * 1024
# The largest request body Daphne takes (an uploaded stream included); a larger one is answered 413
# unread (gg_console.daphne_request). 1 GiB: a million-event stream of ~650-byte lines fits.
GG_MAX_REQUEST_BYTES = int(os.environ.get("GG_MAX_REQUEST_BYTES", 1024 ** 3))
# A larger body than this must come from a signed-in session or a bearer token (checked before it is read).
GG_MAX_ANONYMOUS_BYTES = int(os.environ.get("GG_MAX_ANONYMOUS_BYTES", 1024 ** 2))

if PRODUCTION:
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = 31536000
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")


def _without_traceback(record):
    record.exc_info = record.exc_text = None
    return True


# A request Django refuses as suspicious (a NUL in it, a bad Host, too many fields) is one line in the
# log, its reason: anyone can send thousands, and their stacks would bury the tracebacks that matter.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"without_traceback": {"()": "django.utils.log.CallbackFilter", "callback": _without_traceback}},
    "handlers": {"console": {"class": "logging.StreamHandler"},
                 "refused": {"class": "logging.StreamHandler", "filters": ["without_traceback"]}},
    "loggers": {"django.security": {"handlers": ["refused"], "propagate": False}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
