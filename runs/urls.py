from django.urls import path

from runs.ingest import views as ingest_views
from runs.ingest import api
from runs.feed import views as feed_views
from runs.pages import views as page_views
from runs.launch import views as launch_views

app_name = "runs"
urlpatterns = [
    path("", page_views.run_list, name="list"),
    path("runs/import/", ingest_views.run_import, name="import"),
    path("runs/<int:pk>/", page_views.run_detail, name="detail"),
    path("runs/<int:pk>/export.ndjson", ingest_views.run_export, name="export"),
    path("api/runs/<str:run>/events", api.run_events, name="api_events"),
    path("runs/<int:pk>/feed/", feed_views.run_feed, name="feed"),
    path("runs/<int:pk>/agents/", page_views.run_agents, name="agents"),
    path("runs/<int:pk>/agents/<path:agent_id>/", page_views.agent_detail, name="agent"),
    path("runs/<int:pk>/stores/", page_views.run_stores, name="stores"),
    path("runs/<int:pk>/divergences/", page_views.run_divergences, name="divergences"),
    path("runs/<int:pk>/refusals/", page_views.run_refusals, name="refusals"),
    path("runs/<int:pk>/arms/", page_views.run_arms, name="arms"),
    path("api/runs/<str:run>/report", page_views.api_report, name="api_report"),
    path("runs/new/", launch_views.launch_new, name="new"),
    path("runs/new/validate/", launch_views.launch_validate, name="validate"),
    path("runs/<int:pk>/cancel/", launch_views.run_cancel, name="cancel"),
    path("runs/<int:pk>/rerun/", launch_views.run_rerun, name="rerun"),
    path("configurations/", launch_views.configurations, name="configurations"),
    path("configurations/<int:pk>/delete/", launch_views.configuration_delete, name="configuration_delete"),
]
