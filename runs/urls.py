from django.urls import path

from runs.across import views as across_views
from runs.ingest import views as ingest_views
from runs.ingest import api
from runs.feed import views as feed_views
from runs.pages import header as header_views
from runs.pages import (agents, arms, conversation, divergences, events, overview, project, refusals, report, store,
                        stores, timeline, turns)
from runs.launch import views as launch_views

app_name = "runs"
urlpatterns = [
    path("", across_views.run_list, name="list"),
    path("runs/selected/", across_views.runs_selected, name="selected"),
    path("runs/deletions/", across_views.run_deletions, name="deletions"),
    path("runs/compare/", across_views.compare_page, name="compare"),
    path("api/runs/compare", across_views.api_compare, name="api_compare"),
    path("analysis/", across_views.analysis_page, name="analysis"),
    path("views/save/", across_views.view_save, name="view_save"),
    path("views/<int:pk>/", across_views.view_open, name="view"),
    path("views/<int:pk>/delete/", across_views.view_delete, name="view_delete"),
    path("runs/import/", ingest_views.run_import, name="import"),
    path("runs/<int:pk>/", overview.overview_page, name="detail"),
    path("runs/<int:pk>/export.ndjson", ingest_views.run_export, name="export"),
    path("runs/<int:pk>/delete/", ingest_views.run_delete, name="delete"),
    path("runs/<int:pk>/end/", ingest_views.run_mark_ended, name="mark_ended"),
    path("api/runs/<str:run>/events", api.run_events, name="api_events"),
    path("runs/<int:pk>/feed/", feed_views.run_feed, name="feed"),
    path("runs/<int:pk>/feed/rows", feed_views.feed_rows, name="feed_rows"),
    path("runs/<int:pk>/feed/controls", feed_views.feed_controls, name="feed_controls"),
    path("runs/<int:pk>/header/", header_views.run_header_frame, name="header"),
    path("runs/<int:pk>/agents/", agents.agents_page, name="agents"),
    path("runs/<int:pk>/events/<int:seq>/", events.event_detail, name="event"),
    path("runs/<int:pk>/rejected/<int:line_id>/", events.rejected_detail, name="rejected"),
    path("api/runs/<str:run>/events/<int:seq>", events.api_event, name="api_event"),
    path("api/runs/<str:run>/rejected/<int:line_id>", events.api_rejected, name="api_rejected"),
    # Before the agent's own page: its id is a path and would swallow "turns/5".
    path("runs/<int:pk>/agents/<path:agent_id>/turns/<int:n>/", turns.turn_detail, name="turn"),
    path("runs/<int:pk>/agents/<path:agent_id>/conversation/", conversation.conversation, name="conversation"),
    path("runs/<int:pk>/agents/<path:agent_id>/", agents.agent_page, name="agent"),
    path("runs/<int:pk>/timeline/", timeline.timeline, name="timeline"),
    path("runs/<int:pk>/stores/", stores.stores_page, name="stores"),
    path("runs/<int:pk>/stores/<path:module_id>/", store.store_page, name="store"),
    path("runs/<int:pk>/divergences/", divergences.divergences_page, name="divergences"),
    path("runs/<int:pk>/refusals/", refusals.refusals_page, name="refusals"),
    path("runs/<int:pk>/refusals/entries/", refusals.refusal_entries, name="refusal_entries"),
    path("runs/<int:pk>/arms/", arms.arms_page, name="arms"),
    path("runs/<int:pk>/project/", project.project_page, name="project"),
    path("api/runs/<str:run>/report", report.api_report, name="api_report"),
    path("runs/new/", launch_views.launch_new, name="new"),
    path("runs/new/validate/", launch_views.launch_validate, name="validate"),
    path("runs/<int:pk>/cancel/", launch_views.run_cancel, name="cancel"),
    path("runs/<int:pk>/rerun/", launch_views.run_rerun, name="rerun"),
    path("configurations/", launch_views.configurations, name="configurations"),
    path("configurations/<int:pk>/delete/", launch_views.configuration_delete, name="configuration_delete"),
]
