from django.urls import path

from runs import feed_views, views

app_name = "runs"
urlpatterns = [
    path("", views.run_list, name="list"),
    path("runs/<int:pk>/feed/", feed_views.run_feed, name="feed"),
]
