from django.urls import path

from runs import api, feed_views, views

app_name = "runs"
urlpatterns = [
    path("", views.run_list, name="list"),
    path("runs/import/", views.run_import, name="import"),
    path("runs/<int:pk>/", views.run_detail, name="detail"),
    path("runs/<int:pk>/export.ndjson", views.run_export, name="export"),
    path("api/runs/<str:run>/events", api.run_events, name="api_events"),
    path("runs/<int:pk>/feed/", feed_views.run_feed, name="feed"),
]
