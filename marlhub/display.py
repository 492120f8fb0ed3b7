"""How marlhub's objects show themselves in a notebook: small HTML tables, written once.

Jupyter calls an object's ``_repr_html_``. A hub env shows its agents and their spaces
(:func:`env_html`), a vector env its copies and groups, a view what it converts
(:func:`view_html`), a conformance report its findings; each builds its table with
:func:`html_table`.

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> html = env_html(RockPaperScissors())
    >>> "<th>agent</th>" in html and "player2" in html and "Discrete(3)" in html
    True
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["env_html", "html_table", "view_html"]


def html_table(caption: str, headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """An HTML table with a bold caption; every cell escaped.

    Example:
        >>> html_table("Agents", ["agent"], [["a<1>"]])
        '<div><p><b>Agents</b></p><table><thead><tr><th>agent</th></tr></thead><tbody><tr><td>a&lt;1&gt;</td></tr></tbody></table></div>'
    """
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
                   for row in rows)
    return (f"<div><p><b>{html.escape(caption)}</b></p><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table></div>")


def agent_rows(env: Any) -> list[list[Any]]:
    """One row per possible agent: its id, whether it is live now, and its two spaces."""
    live = set(getattr(env, "agents", None) or ())
    return [[agent, "yes" if agent in live else "", env.get_observation_space(agent),
             env.get_action_space(agent)] for agent in env.possible_agents]


def env_html(env: Any, caption: str = "") -> str:
    """A hub env's agents and their spaces (``live``: in the episode now)."""
    caption = caption or f"{type(env).__name__}: {len(env.possible_agents)} agents"
    return html_table(caption, ["agent", "live", "observation space", "action space"],
                      agent_rows(env))


def view_html(api: str, hub_env: Any) -> str:
    """What a view converts: the API it speaks, and the hub env it shows (its agents)."""
    return env_html(hub_env, f"{api} view of {type(hub_env).__name__}: "
                             f"{len(hub_env.possible_agents)} agents")
