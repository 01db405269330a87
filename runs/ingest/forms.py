from django import forms


class ImportForm(forms.Form):
    file = forms.FileField(
        label="NDJSON stream",
        help_text="gg's stdout (one record per line), or a host's events.jsonl ({\"type\":\"gg\",\"event\":…}).",
    )
    name = forms.CharField(
        label="Run name",
        max_length=200,
        required=False,
        help_text="Defaults to the file's name. Importing into an existing run's name appends to it; "
        "lines it already holds are not stored twice.",
    )

    def clean_name(self):
        return (self.cleaned_data.get("name") or "").strip()
