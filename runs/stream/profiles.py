"""A capability set's profiles (``capabilitySet.agents``), read one way everywhere.

A profile is named by ``id`` (gg's capability-set schema), ``slug`` (the console's launch specs) or
``name``; a record's ``profileId`` may use any of them, so every lookup accepts all three.
"""

from __future__ import annotations

from runs.stream.record import as_list

PROFILE_KEYS = ("id", "slug", "name")


def profiles(capability_set) -> list[dict]:
    """The profile objects of a capability set (anything else in the list is left out)."""
    if not isinstance(capability_set, dict):
        return []
    return [p for p in as_list(capability_set.get("agents")) if isinstance(p, dict)]


def profile_keys(profile: dict) -> list[str]:
    """Every name the profile answers to, in `PROFILE_KEYS` order."""
    return [profile[k] for k in PROFILE_KEYS if isinstance(profile.get(k), str) and profile[k]]


def profile_key(profile: dict) -> str:
    """The profile's identifier: its id, else its slug, else its name ('' for none)."""
    keys = profile_keys(profile)
    return keys[0] if keys else ""


def profile_name(profile: dict) -> str:
    """What the console calls the profile: its name, else its identifier."""
    name = profile.get("name")
    return name if isinstance(name, str) and name else profile_key(profile)


def find_profile(capability_set, profile_id) -> dict | None:
    """The first profile answering to `profile_id` by id, slug or name; None for none."""
    if not isinstance(profile_id, str) or not profile_id:
        return None
    for p in profiles(capability_set):
        if profile_id in profile_keys(p):
            return p
    return None


def profile_names(capability_set) -> dict[str, str]:
    """{every id, slug and name of a profile: its display name}; the first profile wins a name."""
    named = {}
    for p in profiles(capability_set):
        for key in profile_keys(p):
            named.setdefault(key, profile_name(p))
    return named
