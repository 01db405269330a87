"""Display filters for run pages: token counts, USD, durations."""

from datetime import timedelta

from django import template

from runs.stream.usage import format_tokens

register = template.Library()


# 12345 -> "12.3k"; None -> "—" (not reported is never shown as 0): the feed's figure too.
tokens = register.filter("tokens", format_tokens)


@register.filter
def usd(value):
    """0.0063 -> "$0.0063"; None -> "—"."""
    if value is None or value == "":
        return "—"
    try:
        n = float(value)
    except (TypeError, ValueError, OverflowError):  # not a number, or an int past a float's range
        return str(value)
    if n == 0:
        return "$0"
    if abs(n) < 1:
        return f"${n:.4f}".rstrip("0").rstrip(".") if abs(n) >= 0.0001 else f"${n:.2g}"
    return f"${n:,.2f}"


@register.filter
def duration(value):
    """timedelta -> "1h 02m", "3m 05s", "0.4s"; None -> "—"."""
    if not isinstance(value, timedelta):
        return "—"
    secs = value.total_seconds()
    if secs < 10:
        return f"{secs:.1f}s"
    secs = int(secs)
    h, rem = divmod(secs, 3600)
    m, s = divmod(rem, 60)
    if h:
        return f"{h}h {m:02d}m"
    if m:
        return f"{m}m {s:02d}s"
    return f"{s}s"


@register.filter
def get(mapping, key):
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def sorted_counts(mapping):
    """{key: n} -> [(key, n)] most first, then by key."""
    if not mapping:
        return []
    return sorted(mapping.items(), key=lambda kv: (-kv[1], kv[0]))


@register.filter
def total(mapping):
    """{key: n} -> the sum of the n (0 for nothing)."""
    return sum(v for v in (mapping or {}).values() if isinstance(v, (int, float)))


@register.filter
def percent(value):
    """A rate: 0.125 -> "12.5%", 0 -> "0%", 1 -> "100%", 0.000335 -> "0.034%" (not "0.0%", which
    read as none beside a bar); None -> "—"."""
    if not isinstance(value, (int, float)):
        return "—"
    if value in (0, 1):
        return f"{value * 100:.0f}%"
    if 0 < value * 100 < 0.1:
        return f"{value * 100:.2g}%" if value * 100 >= 0.001 else "<0.001%"
    return f"{value * 100:.1f}%"


@register.filter
def pairs(mapping):
    """A stream-keyed dict's (key, value) pairs: `d.items` in a template reads the key "items" first,
    and a stream can name an operation, a model or a limit "items" (a 500 for the whole page)."""
    return list(mapping.items()) if isinstance(mapping, dict) else []
