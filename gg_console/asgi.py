"""ASGI entry point: HTTP goes to Django, WebSockets to the Channels routes.

Sockets pass SameOriginValidator (gg_console.origins: an Origin other than this site's scheme,
host and port is refused), RefuseNulSocket (gg_console.nul: a NUL in the handshake) and
AuthMiddlewareStack (the session user; consumers refuse anonymous users). The `channel` protocol is
the launch worker: `manage.py runworker gg-runs` executes runs dispatched over Redis.

Loading the application (Daphne, runserver, runworker) sweeps runs a dead server or worker left
live to `interrupted` (runs.launch.dispatch.sweep_on_start), and sets how Daphne takes request bodies
(gg_console.daphne_request: no form parsing of its own, a size limit).
"""

import gc
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gg_console.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs Django set up first)
from channels.routing import ChannelNameRouter, ProtocolTypeRouter, URLRouter  # noqa: E402

from gg_console import daphne_request  # noqa: E402
from gg_console.nul import RefuseNulSocket  # noqa: E402
from gg_console.origins import SameOriginValidator  # noqa: E402
from gg_console.routing import websocket_urlpatterns  # noqa: E402
from runs.ingest import deletion  # noqa: E402
from runs.launch import dispatch  # noqa: E402


daphne_request.install()

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": SameOriginValidator(RefuseNulSocket(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))),
        "channel": ChannelNameRouter({dispatch.CHANNEL: dispatch.RunWorkerConsumer.as_asgi()}),
    }
)
dispatch.sweep_on_start()
deletion.resume_on_start()

# What loading left (Django, the apps, the URLconf: ~100,000 objects) lives as long as the process:
# out of the collector's sight. Its full passes, every few seconds under load, walked all of it and
# held every socket and write of the process for ~80 ms a time (a tenth of bench/feed's slowest rows).
# (How often the young objects are collected is set for every process in runs.apps.)
gc.collect()
gc.freeze()
