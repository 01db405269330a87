"""WebSocket routes. Every consumer refuses anonymous users itself."""

from django.urls import path

from runs.feed.consumer import FeedConsumer

websocket_urlpatterns = [
    path("ws/runs/<int:run>/feed/", FeedConsumer.as_asgi()),
]
