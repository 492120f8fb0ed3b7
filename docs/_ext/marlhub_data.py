"""reST for the pages made of data: families, catalogue, known faults, compatibility, benchmarks.

Every function returns a list of reST lines; text that comes from code or data
goes through the ``escape`` / ``literal`` functions it is given, so nothing in
an id or a reason can break the markup. The JSON files are those the scripts in
``benchmarks/`` write with ``--json`` into ``docs/data/``.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Callable, Optional

Escape = Callable[[Any], str]

#: The statuses of a conversion, in the order the tables show them.
STATUSES = ["pass", "refused", "known-fault", "fail", "skipped"]
#: Short forms of the target APIs for the matrix's header.
SHORT = {"pettingzoo.aec": "AEC", "pettingzoo.parallel": "parallel", "openspiel": "OpenSpiel",
         "gymnasium": "Gymnasium", "gymnasium.tuple": "Tuple", "rllib": "RLlib",
         "torchrl": "TorchRL"}
#: The checker each target is proven by (marlhub.conformance.interop).
CHECKERS = {
    "pettingzoo.aec": "PettingZoo's ``api_test`` and ``seed_test``",
    "pettingzoo.parallel": "PettingZoo's ``parallel_api_test``",
    "openspiel": "``pyspiel.random_sim_test``",
    "gymnasium": "Gymnasium's ``check_env`` (agents' views, joint view)",
    "gymnasium.tuple": "Gymnasium's ``check_env`` (the Tuple view of the team)",
    "rllib": "RLlib's ``check_multiagent_environments`` and its ``MultiAgentEnvRunner``",
    "torchrl": "TorchRL's ``check_env_specs`` on ``to_torchrl``",
}


def load_json(path: Path, logger: Any) -> Optional[dict[str, Any]]:
    """The JSON document at ``path``; None when the file is absent, or malformed (a warning)."""
    if not path.exists():
        return None
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        logger.warning("%s is not valid JSON: %s", path, exc, type="marlhub")
        return None
    if not isinstance(document, dict):
        logger.warning("%s holds %s, not a JSON object", path, type(document).__name__,
                       type="marlhub")
        return None
    return document


def measured_line(document: dict[str, Any], escape: Escape) -> str:
    """"Measured <date> on <machine> with <command>", from a benchmark document."""
    machine = document.get("machine") or {}
    parts = [f"{machine.get('cpus', '?')} CPUs"]
    if machine.get("cpu"):
        parts.insert(0, str(machine["cpu"]))
    if machine.get("gpu"):
        parts.append(f"GPU {machine['gpu']}")
    load = machine.get("load_average") or machine.get("load_average_before")
    if load:
        parts.append("load average " + " / ".join(f"{x:.2f}" for x in load))
    if machine.get("platform"):
        parts.append(str(machine["platform"]))
    if machine.get("python"):
        parts.append(f"Python {machine['python']}")
    line = f"Measured {escape(document.get('measured', 'at an unknown time'))} on " \
           f"{escape(', '.join(parts))}"
    if document.get("seconds"):
        line += f", in {document['seconds']:.0f} s"
    versions = document.get("versions") or {}
    if versions:
        line += "; versions: " + escape(", ".join(f"{k} {v}" for k, v in versions.items() if v))
    if document.get("command"):
        line += f"; command: ``{document['command']}``"
    return line + "."


def _list_table(header: list[str], rows: list[list[str]], widths: Optional[list[int]] = None,
                css: str = "") -> list[str]:
    lines = [".. list-table::", "   :header-rows: 1"]
    if widths:
        lines.append("   :widths: " + " ".join(map(str, widths)))
    if css:
        lines.append(f"   :class: {css}")
    lines.append("")
    for row in [header, *rows]:
        lines.append(f"   * - {row[0] or ' '}")
        lines += [f"     - {cell or ' '}" for cell in row[1:]]
    return lines + [""]


# -- registry -----------------------------------------------------------------------------


def _api_of(family: Any) -> tuple[str, str]:
    from marlhub.adapters.apis import APIS

    where = f"{type(family).__module__}:{type(family).__name__}"
    for api in APIS:
        if where in api.families:
            return api.name, api.extra
    return "", ""


def _listing() -> Any:
    from marlhub.registry import default_registry

    return default_registry().listing("*")


def _declared_extras() -> Optional[set[str]]:
    """The extras ``pyproject.toml`` declares, or None where it cannot be read."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        return None
    path = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        project = tomllib.loads(path.read_text(encoding="utf-8"))["project"]
    except (OSError, KeyError, ValueError):
        return None
    return set(project.get("optional-dependencies", {}))


def _extra_cell(extra: str, literal: Escape) -> str:
    declared = _declared_extras()
    if not extra:
        return "--"
    if declared is not None and extra not in declared:
        return "(core)" if extra == "gymnasium" else f"{literal(extra)} (not declared yet)"
    return literal(f"marlhub[{extra}]")


def families_rst(escape: Escape, literal: Escape) -> list[str]:
    """A table of the default registry's families."""
    from marlhub.registry import default_registry

    registry = default_registry()
    listing = _listing()
    counts = Counter(env_id.split("/", 1)[0] for env_id in listing.ids if "/" in env_id)
    rows = []
    for name, family in sorted(registry.families.items()):
        api, extra = _api_of(family)
        count = counts.get(name, 0)
        shown = str(count) if count else "resolved on use"
        rows.append([literal(f"{name}/..."), escape(api) or "--", _extra_cell(extra, literal),
                     shown, escape(family.description)])
    builtin = [env_id for env_id in listing.ids if "/" not in env_id]
    rows.insert(0, [escape("(no prefix)"), "hub", literal("marlhub"), str(len(builtin)),
                    "built-in reference envs and envs registered with "
                    "``register_env`` or the ``marlhub.envs`` entry points"])
    lines = _list_table(["prefix", "API", "extra", "ids here", "what it holds"], rows,
                        [16, 10, 18, 8, 48])
    problems = [p for p in listing.problems if p.family]
    if problems:
        lines += ["Families not listed in this build (their backend is missing):", ""]
        lines += [f"* {escape(p)}" for p in problems] + [""]
    return lines


def _agents_text(entry: dict[str, Any], literal: Escape) -> str:
    agents = entry.get("agents")
    if agents is None:
        return ""
    shown = ", ".join(literal(a) for a in agents[:4])
    return f"{len(agents)}: {shown}" + (", ..." if len(agents) > 4 else "")


def _spaces_text(entry: dict[str, Any], literal: Escape) -> str:
    groups = entry.get("spaces") or []
    parts = []
    for group in groups[:3]:
        who = "" if len(groups) == 1 else f"{literal(group['agents'][0])}" + \
            (f" (+{len(group['agents']) - 1})" if len(group["agents"]) > 1 else "") + ": "
        parts.append(f"{who}{literal(group['observation'])} → {literal(group['action'])}")
    if len(groups) > 3:
        parts.append(f"... {len(groups) - 3} more groups")
    return "; ".join(parts)


def _statuses(entry: dict[str, Any], targets: list[str]) -> dict[str, str]:
    return {c["target"]: c["status"] for c in entry.get("conversions", [])
            if c["target"] in targets}


def _status_cell(status: Optional[str]) -> str:
    return {"pass": ":marlhub-pass:`pass`", "refused": ":marlhub-refused:`refused`",
            "known-fault": ":marlhub-known-fault:`known fault`",
            "fail": ":marlhub-fail:`FAIL`", "skipped": ":marlhub-skipped:`skipped`",
            None: "--"}[status]


def catalogue_rst(document: Optional[dict[str, Any]], escape: Escape,
                  literal: Escape) -> list[str]:
    """Every id of the default registry by family, joined with the sweep's agents and spaces."""
    listing = _listing()
    swept = {e["id"]: e for e in (document or {}).get("ids", [])}
    by_family: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for env_id, description in listing.entries:
        by_family[env_id.split("/", 1)[0] if "/" in env_id else ""].append((env_id, description))
    lines = []
    if document is None:
        lines += [".. note::", "", "   Agents and spaces come from the interop sweep's JSON, "
                  "which is not measured yet: run ``python benchmarks/interop_sweep.py --jobs 1 "
                  "--json docs/data/interop.json``.", ""]
    else:
        lines += [f"Agents and spaces as the interop sweep found them. "
                  f"{measured_line(document, escape)}", ""]
    for family in sorted(by_family, key=lambda f: (f != "", f)):
        title = "Built-in envs" if family == "" else f"{family}/"
        entries = by_family[family]
        lines += [f".. _catalogue-{family or 'builtin'}:", "", title, "~" * len(title), ""]
        not_swept = sum(1 for env_id, _ in entries if env_id not in swept)
        lines.append(f"{len(entries)} ids" + (f"; {not_swept} of them were not in the interop "
                                              "sweep (no agents or spaces shown)." if not_swept
                                              and document is not None else "."))
        lines.append("")
        rows = []
        for env_id, description in entries:
            entry = swept.get(env_id, {})
            detail = escape(description.strip().split("\n")[0])
            if entry.get("not_loaded"):
                why = entry["not_loaded"].rsplit("failed: ", 1)[-1]
                detail += f" -- *does not load as it is*: {escape(why[:140])}"
            elif entry.get("describe_error"):
                detail += f" -- *could not be described*: {escape(entry['describe_error'][:140])}"
            rows.append([literal(env_id), detail, _agents_text(entry, literal),
                         _spaces_text(entry, literal)])
        lines += _list_table(["id", "description", "agents", "observation → action spaces"],
                             rows, [22, 30, 18, 30], "marlhub-catalogue")
    return lines


def known_faults_rst(escape: Escape, literal: Escape,
                     only: Optional[list[str]] = None) -> list[str]:
    """Every fault of a native env named by its family (of ``only``), grouped by rule and reason."""
    from marlhub.registry import default_registry
    from marlhub.registry.ids import split_id

    families = default_registry().families
    grouped: dict[tuple[str, str], list[str]] = defaultdict(list)
    for env_id in _listing().ids:
        prefix, rest = split_id(env_id)
        if only is not None and prefix not in only:
            continue
        family = families.get(prefix or "")
        faults = getattr(family, "known_faults", None)
        if faults is None:
            continue
        for rule, reason in faults(rest).items():
            grouped[(rule, reason)].append(env_id)
    if not grouped:
        return ["No family here names a known fault of its native envs.", ""]
    by_fault: dict[tuple[tuple[str, ...], str], list[str]] = defaultdict(list)
    for (rule, reason), ids in grouped.items():  # one row per fault, its rules together
        by_fault[(tuple(ids), reason)].append(rule)
    rows = []
    for (ids, reason), rules in sorted(by_fault.items(), key=lambda kv: (kv[0][0][0], kv[1])):
        shown = ", ".join(literal(i) for i in ids[:3])
        if len(ids) > 3:
            shown += f" and {len(ids) - 3} more ({literal(ids[0].split('/')[0] + '/*')})"
        rule_cells = ", ".join(literal(rule) if rule.startswith("target.")
                               else f":ref:`{rule} <rule-{rule}>`" for rule in sorted(rules))
        rows.append([shown, rule_cells, escape(reason)])
    return _list_table(["ids", "rule or target", "the native fault"], rows, [28, 18, 54])


def compatibility_rst(document: Optional[dict[str, Any]], escape: Escape,
                      literal: Escape) -> list[str]:
    """The sweep: counts per target, non-passes with reasons, and the matrix by family."""
    if document is None:
        return [".. note::", "", "   Not measured yet: run ``python benchmarks/interop_sweep.py "
                "--jobs 1 --json docs/data/interop.json`` (with the patterns above) and build "
                "again.", ""]
    entries = [e for e in document.get("ids", []) if "conversions" in e]
    targets = list(dict.fromkeys(c["target"] for e in entries for c in e["conversions"]))
    lines = [measured_line(document, escape), "",
             f"{len(entries)} ids were converted to {len(targets)} target APIs; "
             f"{len(document.get('ids', [])) - len(entries)} ids the sweep reached do not load "
             "as they are (they need parameters or a missing dependency; listed in the "
             ":doc:`catalogue`).", ""]
    lines += ["Summary", "~~~~~~~", ""]
    rows = []
    for target in targets:
        counts = Counter(c["status"] for e in entries for c in e["conversions"]
                         if c["target"] == target)
        rows.append([literal(target), CHECKERS.get(target, "")] +
                    [str(counts.get(s, 0)) for s in STATUSES])
    lines += _list_table(["target", "checked by", "pass", "refused (structure)",
                          "known native fault", "fail", "skipped"], rows,
                         [14, 34, 8, 12, 12, 8, 8])
    lines += _not_passed_rst(entries, escape, literal)
    lines += ["The matrix", "~~~~~~~~~~", "",
              "One row per id, one column per target API (full reasons above).", ""]
    header = ["id"] + [SHORT.get(t, t) for t in targets]
    families: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in entries:
        families[entry["id"].split("/", 1)[0] + "/" if "/" in entry["id"] else ""].append(entry)
    for family, members in families.items():
        lines += [f"**{escape(family) or 'Built-in envs'}** ({len(members)} ids)", ""]
        rows = [[literal(e["id"])] + [_status_cell(_statuses(e, targets).get(t))
                                      for t in targets] for e in members]
        lines += _list_table(header, rows, None, "marlhub-compat")
    return lines


def _not_passed_rst(entries: list[dict[str, Any]], escape: Escape,
                    literal: Escape) -> list[str]:
    """Every conversion that did not pass, its reason grouped by kind."""
    lines = ["What did not pass, and why", "~~~~~~~~~~~~~~~~~~~~~~~~~~~", ""]
    grouped: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    others = []
    for entry in entries:
        for c in entry["conversions"]:
            if c["status"] == "refused":  # grouped by the kind of structure
                grouped[("refused", c["target"], c["reason"].split(":")[0])].append(entry["id"])
            elif c["status"] == "known-fault":  # grouped by the fault, without the checker's words
                grouped[("known fault", c["target"], c["reason"].split("): ")[0] + ")"
                         if "): " in c["reason"] else c["reason"])].append(entry["id"])
            elif c["status"] != "pass":
                others.append((entry["id"], c))
    for env_id, c in others:  # failures first, each with the checker's words
        lines += [f"* **{escape(c['status'])}** {literal(env_id)} to {literal(c['target'])}: "
                  f"{escape(c['reason'][:400])}", ""]
    for (status, target, kind), ids in sorted(grouped.items()):
        shown = ", ".join(literal(i) for i in ids[:6]) + (f" and {len(ids) - 6} more"
                                                          if len(ids) > 6 else "")
        lines += [f"* **{status}** for {literal(target)} ({len(ids)} "
                  f"id{'s' if len(ids) != 1 else ''}), {escape(kind)}: {shown}.", ""]
    if not grouped and not others:
        lines += ["Every conversion passed.", ""]
    return lines


# -- benchmarks ---------------------------------------------------------------------------

#: How to measure each benchmark whose JSON the pages read.
COMMANDS = {
    "pettingzoo_overhead": "python benchmarks/pettingzoo_overhead.py --json "
                           "docs/data/pettingzoo_overhead.json",
    "openspiel_overhead": "python benchmarks/openspiel_overhead.py --json "
                          "docs/data/openspiel_overhead.json",
    "torchrl_overhead": "python benchmarks/torchrl_overhead.py --json "
                        "docs/data/torchrl_overhead.json",
    "batched_cuda": "python benchmarks/batched_throughput.py --device cuda --json "
                    "docs/data/batched_cuda.json",
}


#: The rate's unit where a benchmark's JSON does not say.
UNITS = {
    "pettingzoo_overhead": "agent-steps/s (CPU time)",
    "torchrl_overhead": "frames/s of rollout (VMAS: steps/s), CPU time",
    "remote_overhead": "calls/s, wall clock",
}


def _tables_of(name: str, document: dict[str, Any]) -> list[dict[str, Any]]:
    """The document's tables in the shape ``{"title", "rows": [{"contender", ...}]}``."""
    if "tables" in document:
        return list(document["tables"])
    if "rates" in document and "ratios" in document:  # torchrl_overhead.py
        import statistics

        tables = []
        for case, rates in document["rates"].items():
            ratios = document["ratios"].get(case, {})
            rows = [{"contender": contender, "rate": statistics.median(values),
                     "ratio": ratios.get(contender)} for contender, values in rates.items()]
            tables.append({"title": case, "rows": rows})
        return tables
    if "results" in document:  # batched_throughput.py: one row per scenario, copies, contestant
        cases: dict[str, list[dict[str, Any]]] = {}
        for result in document["results"]:
            cases.setdefault(f"{result['scenario']}, {result['copies']:,} copies", []).append(
                {"contender": result["contestant"], "rate": result["median"],
                 "ratio": result["ratio_to_native"]})
        return [{"title": title, "rows": sorted(rows, key=lambda r: r["contender"] != "native")}
                for title, rows in cases.items()]
    raise ValueError(f"docs/data/{name}.json has none of 'tables', 'rates' and 'ratios', "
                     "'results'")


def _rate_and_ratio(row: dict[str, Any]) -> tuple[Any, Any]:
    return row.get("agent_steps_per_s", row.get("rate")), row.get("ratio_to_native",
                                                                   row.get("ratio"))


def _summary_rst(tables: list[dict[str, Any]], escape: Escape) -> list[str]:
    """One row per case, one column per contender: its rate and its ratio to the reference.

    Tables measured against another reference (their first contender: a benchmark
    that measures two kinds of thing) get a summary table of their own.
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    for table in tables:
        groups.setdefault(table["rows"][0]["contender"] if table["rows"] else "", []).append(table)
    lines = ["Summary: rate per second, and in bold the median paired ratio to the native "
             "(or reference) contender, > 1 is faster.", ""]
    for group in groups.values():
        contenders = list(dict.fromkeys(row["contender"] for t in group for row in t["rows"]))
        rows = []
        for table in group:
            cells = {}
            for row in table["rows"]:
                rate, ratio = _rate_and_ratio(row)
                if isinstance(rate, (int, float)):
                    cells[row["contender"]] = f"{rate:,.0f}" + (
                        f" (**{ratio:.2f}**)" if isinstance(ratio, (int, float)) else "")
            rows.append([escape(table["title"])] + [cells.get(c, "--") for c in contenders])
        lines += _list_table(["case"] + [escape(c) for c in contenders], rows)
    return lines


def benchmark_rst(name: str, document: Optional[dict[str, Any]], escape: Escape,
                  literal: Escape, logger: Any) -> list[str]:
    """The benchmark's tables, one per env, or a note that it is not measured yet."""
    command = COMMANDS.get(name, f"python benchmarks/{name}.py --json docs/data/{name}.json")
    if document is None:
        return [".. note::", "", f"   Not measured yet: run ``{command}`` and build again.", ""]
    try:
        tables = _tables_of(name, document)
    except ValueError as exc:
        logger.warning("%s", exc, type="marlhub")
        return [".. note::", "", f"   Not readable: run ``{command}`` again.", ""]
    lines = [measured_line(document, escape), ""]
    lines += _summary_rst(tables, escape)
    if not any("overhead_us_per_agent_step" in row for t in tables for row in t["rows"]):
        tables = []  # the summary holds everything there is
    else:
        lines += ["Each case in detail, with the overhead per agent-step:", ""]
    for table in tables:
        rows = []
        for row in table["rows"]:
            rate, ratio = _rate_and_ratio(row)
            overhead = row.get("overhead_us_per_agent_step")
            rows.append([escape(row["contender"]),
                         f"{rate:,.0f}" if isinstance(rate, (int, float)) else "",
                         f"{ratio:.2f}" if isinstance(ratio, (int, float)) else "",
                         f"{overhead:.2f}" if isinstance(overhead, (int, float))
                         and row["contender"] != "native" else ""])
        lines += [f"**{escape(table['title'])}**", ""]
        unit = document.get("unit") or UNITS.get(name, "agent-steps/s")
        lines += _list_table(["contender", escape(unit), "ratio to native (or reference)",
                              "overhead, µs per agent-step"],
                             rows, [40, 20, 20, 20])
    if document.get("not_measured"):
        lines += [f"Not installed when measured: {escape(', '.join(document['not_measured']))}.",
                  ""]
    return lines


__all__ = ["benchmark_rst", "catalogue_rst", "compatibility_rst", "families_rst",
           "known_faults_rst", "load_json", "measured_line"]
