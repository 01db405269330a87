"""WebSocket routes. Every consumer refuses anonymous users itself."""

websocket_urlpatterns = []
