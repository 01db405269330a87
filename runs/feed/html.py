"""A window of feed rows as one socket message's HTML (every field escaped)."""

from html import escape


def row_html(row):
    # Every field is escaped (event payloads are untrusted); markup as runs/feed.html expects.
    # The row opens its record through a plain link stretched over it (click or Enter, no script);
    # the chips and the output fold sit above it. The DOM stays small: no whitespace between the
    # row's flex items (each would be a text node) and the offset is an attribute the stylesheet
    # shows in place of the time (`.feed-time[data-offset]`).
    agent = escape(row.agent)
    offset = (f' data-offset="{"+" if row.offset >= 0 else "−"}{abs(row.offset):.3f}s"'
              if row.offset is not None else "")
    turn = f'<a class="feed-turn tag" href="{escape(row.turn_href)}">turn {int(row.turn)}</a>' if row.turn_href else ""
    opened = f'<a class="feed-open" href="{escape(row.event_href)}">' if row.event_href else "<span>"
    if row.href:
        chip = f'<a class="feed-agent tag" href="{escape(row.href)}">{agent}</a>'
    else:
        chip = "" if row.href is None else f'<span class="feed-agent tag">{agent}</span>'
    failure = f'<span class="feed-failure">{escape(row.failure)}</span>' if row.failure else ""
    if row.output:
        more = (f'<details class="feed-output"><summary class="muted">{escape(row.args)}</summary>'
                f'<pre>{escape(row.output)}</pre></details>')
    elif row.args:
        more = f'<div class="feed-args muted mono">{escape(row.args)}</div>'
    else:
        more = ""
    return (
        f'<div class="feed-row tone-{escape(row.tone)}" data-seq="{row.seq}" data-agent="{agent}"'
        f' data-kind="{escape(row.kind)}" id="seq-{row.seq}"{f" data-turn={int(row.turn)}" if row.turn else ""}>'
        f'{opened}<time class="feed-time" title="{escape(row.timestamp)}"{offset}>{escape(row.time)}</time>'
        f'{"</a>" if row.event_href else "</span>"}'
        f'<span class="feed-label">{escape(row.label.upper())}</span>{chip}{turn}'
        f'<span class="feed-detail{" mono" if row.kind in ("call", "raw") else ""}">{escape(row.detail)}</span>{failure}{more}'
        "</div>"
    )


def render_rows(rows, cursor):
    """One socket message: the rows appended to #feed-rows (out of band), then the cursor (the
    last seq read). Built here rather than in a template: it is the feed's hot path, and each
    window is rendered once for every connection."""
    appended = f'<div hx-swap-oob="beforeend:#feed-rows">{"".join(map(row_html, rows))}</div>\n' if rows else ""
    return f'{appended}<span id="feed-cursor" hx-swap-oob="true" data-seq="{int(cursor)}"></span>'
