from django import forms
from django.contrib import admin

from runs import models
from runs.ingest.rebuild import rebuild_projections
from runs.ingest.writer import RunGone
from runs.ingest.services import run_name_problem


@admin.register(models.Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("name", "source", "status", "created_at", "last_seq", "agent_count", "turn_count")
    list_filter = ("status", "source")
    search_fields = ("name", "session_id")
    actions = ["rebuild_projections"]

    @admin.action(description="Rebuild projections from the stored events")
    def rebuild_projections(self, request, queryset):
        for run in queryset:
            try:
                stats = rebuild_projections(run)
            except RunGone as exc:
                self.message_user(request, str(exc))
                continue
            self.message_user(request, f"{run.name}: rebuilt from {stats['events']} events.")

    def has_delete_permission(self, request, obj=None):
        # The console deletes runs (runs.ingest.deletion: in the background, a batch a transaction);
        # the admin's delete would take a million records in one request and one transaction.
        return False


@admin.register(models.Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ("agent_id", "run", "profile_id", "execution_mode", "program_language", "status", "turns")
    list_filter = ("execution_mode", "status")
    search_fields = ("agent_id", "profile_id")


@admin.register(models.ModuleStore)
class ModuleStoreAdmin(admin.ModelAdmin):
    list_display = ("module_id", "kind", "run", "snapshot_type", "snapshot_seq")


@admin.register(models.Holding)
class HoldingAdmin(admin.ModelAdmin):
    list_display = ("agent", "kind", "module_id", "enabled", "origin", "writable", "scope")


@admin.register(models.Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ("run", "seq", "type", "agent_id", "operation", "tool_name", "ok", "failure", "turn")
    list_filter = ("type",)
    search_fields = ("operation", "tool_name")


@admin.register(models.RejectedLine)
class RejectedLineAdmin(admin.ModelAdmin):
    list_display = ("run", "line_number", "reason")


class IngestTokenForm(forms.ModelForm):
    def clean_run_names(self):
        """Each line a name a run can have, by the rule every run is created with (the --run option's)."""
        names = self.cleaned_data["run_names"]
        for number, name in enumerate(names.splitlines(), 1):
            problem = name.strip() and run_name_problem(name)
            if problem:
                raise forms.ValidationError(f"Line {number}: {problem}")
        return names


@admin.register(models.IngestToken)
class IngestTokenAdmin(admin.ModelAdmin):
    """Add one to get a key for POST /api/runs/<run>/events (or: manage.py ingest_token USER)."""

    form = IngestTokenForm

    list_display = ("label", "user", "scope", "created_at")
    fields = ("user", "label", "run_names", "key")
    readonly_fields = ("key",)

    @admin.display(description="runs")
    def scope(self, token):
        return ", ".join(token.scope()) or "any run its user created"


@admin.register(models.SavedConfiguration)
class SavedConfigurationAdmin(admin.ModelAdmin):
    list_display = ("name", "created_by", "updated_at")


@admin.register(models.SavedView)
class SavedViewAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "created_by", "created_at")
    list_filter = ("kind",)
