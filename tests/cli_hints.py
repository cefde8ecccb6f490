"""Every ``pressroom …`` command that Pressroom shows a person, collected from the shipped
files, and a check of each against the real CLI parser.

A hint that names an option the CLI does not have (the console once told operators to run
``pressroom resolve JOB --retry``) strands whoever follows it, and no test of the command
itself notices. The collector reads what a person is shown: backtick-quoted commands in
Python strings, docstrings and Markdown, ``<code>`` commands in the console's templates,
and the lines of Markdown code blocks that start with ``pressroom``. The checker resolves
the subcommand path, checks every option against that command's own parameters, and
parses the arguments with typer's click (no callback runs). A reference in prose
(``pressroom run``, ``pressroom worker --health-port``, or a command cut short by ``…``)
may leave out required arguments; a command with its arguments given must parse whole,
and a ``resolve`` must also build its resolution (``cli/resolution.py``), where
the value formats are checked.
"""

from __future__ import annotations

import html
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import typer
import typer.main
from typer._click import exceptions as click_errors
from typer._click.core import Command
from typer.core import TyperGroup, TyperOption

# typer 0.29 vendors click (``typer._click``) and re-exports none of its usage errors, so
# the checker names them from there; the commands are typer's own classes.

ROOT = Path(__file__).resolve().parent.parent

#: the folders and files a person reads hints from (tests are not shown to anyone)
_PY_SOURCES = ("activities", "artifacts", "bench", "cli", "client", "context", "contracts",
               "evals", "examples", "presentation", "webconsole", "workflows",
               "pressroom.py", "settings.py", "worker.py")
_SKIP_PARTS = {".venv", "tests", "__pycache__", ".git", "node_modules", "reports"}

_BACKTICKED = re.compile(r"`+(pressroom(?:\s[^`\n]*)?)`+")
_HTML_CODE = re.compile(r"<code>(pressroom(?:\s[^<]*)?)</code>")
_FSTRING_FIELD = re.compile(r"\{[^{}]*\}")
_JINJA_EXPR = re.compile(r"\{\{.*?\}\}")
_JINJA_TAG = re.compile(r"\{%.*?%\}")
#: a word that stands for a value the reader fills in: JOB, NAME, TOKENS, FILE.yaml, HOST:PORT
_PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(?:[.:@=][A-Za-z0-9_.]+)*$")
#: where a shell line stops being the command
_SHELL_STOP = {"|", "||", "&&", ";", ">", ">>", "2>", "<", "&"}
#: tokens that say "and more": the hint is cut there and read as a reference
_SHELL_FENCES = {"", "sh", "bash", "shell", "console"}
_ELLIPSIS = {"…", "...", "<flag>", "<flags>", "[options]", "OPTIONS"}


@dataclass(frozen=True)
class Hint:
    """One command as shown: where it is, its text, and whether it stands in prose (a
    reference that may leave out arguments) or in a code block (a command to type)."""

    where: str
    text: str
    in_prose: bool


def _shipped_files() -> Iterator[Path]:
    for name in _PY_SOURCES:
        path = ROOT / name
        files = [path] if path.is_file() else sorted(path.rglob("*.py"))
        yield from (f for f in files if not _SKIP_PARTS.intersection(f.parts))
    yield from sorted((ROOT / "webconsole").rglob("*.html"))
    for md in sorted(ROOT.rglob("*.md")):
        if not _SKIP_PARTS.intersection(md.relative_to(ROOT).parts):
            yield md


def _field(match: re.Match[str]) -> str:
    """A template field naming a job becomes a sample job id; any other field (flags, a
    name filled in at run time) cuts the hint there, as ``…`` does."""
    return "job-1" if "job" in match.group(0) else "…"


def _fill_templates(text: str) -> str:
    """Python f-string fields and Jinja expressions are filled in; Jinja tags go."""
    text = _JINJA_TAG.sub("", _JINJA_EXPR.sub(_field, text))
    return _FSTRING_FIELD.sub(_field, text)


def collect_hints() -> list[Hint]:
    """Every ``pressroom …`` a person can read in the shipped files."""
    hints: list[Hint] = []
    for path in _shipped_files():
        rel = path.relative_to(ROOT).as_posix()
        lines = path.read_text(encoding="utf-8").splitlines()
        in_fence = fence_open = False
        pending = ""
        for number, line in enumerate(lines, 1):
            where = f"{rel}:{number}"
            if path.suffix == ".md" and line.lstrip().startswith("```"):
                # a fence with another language (```text: a diagram) holds no commands
                fence_open = not fence_open
                in_fence = fence_open and line.strip().removeprefix("```") in _SHELL_FENCES
                continue
            if in_fence:
                stripped = line.strip().removeprefix("$ ")
                if pending:
                    stripped = pending + " " + stripped
                    pending = ""
                if stripped.startswith("pressroom ") or stripped == "pressroom":
                    if stripped.endswith("\\"):
                        pending = stripped[:-1].rstrip()
                        continue
                    hints.append(Hint(where, stripped, in_prose=False))
                continue
            pattern = _HTML_CODE if path.suffix == ".html" else _BACKTICKED
            for match in pattern.finditer(line):
                text = match.group(1)
                if path.suffix in (".py", ".html"):
                    text = html.unescape(_fill_templates(text))
                # prose lists commands as `pressroom run / status / approve`
                first, *others = text.split(" / ")
                hints.append(Hint(where, first, in_prose=True))
                hints.extend(Hint(where, f"pressroom {o}", in_prose=True) for o in others)
    return hints


def _tokens(text: str) -> tuple[list[str], bool]:
    """The command's words up to a shell operator or an ellipsis, and whether it was cut."""
    # usage notation: `[--json]` is an optional part, checked like any other
    text = re.sub(r"\[(-[^\]]*)\]", r"\1", text)
    lexer = shlex.shlex(text, posix=True, punctuation_chars="|&;<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words: list[str] = []
    cut = False
    for word in lexer:
        if word in _SHELL_STOP or word.startswith("$("):
            break
        if word in _ELLIPSIS or word.endswith(("…", "...")):
            cut = True
            break
        words.append(word)
    return words, cut


def _option_names(command: Command) -> set[str]:
    names = {"--help"}
    for param in command.params:
        if isinstance(param, TyperOption):
            names.update(param.opts)
            names.update(param.secondary_opts)
    return names


#: options that take an amount as text (``--cost-budget USD``), checked like a count
_AMOUNT_OPTIONS = {"--cost-budget"}


def _options(command: Command) -> set[str]:
    return {opt for param in command.params if isinstance(param, TyperOption)
            for opt in param.opts}


def _int_options(command: Command) -> set[str]:
    return {opt for param in command.params if isinstance(param, TyperOption)
            and param.type_descriptor.annotation in (int, int | None, list[int], list[int] | None)
            for opt in param.opts}


def check_hint(hint: Hint, app: typer.Typer) -> str | None:
    """``None`` when the hint is a real command, else one line saying what is wrong."""
    try:
        words, cut = _tokens(hint.text)
    except ValueError as exc:  # an unclosed quote
        return f"{hint.where}: `{hint.text}` does not split as a shell line ({exc})"
    if not words or words[0] != "pressroom":
        return None
    if len(words) > 1 and words[1].endswith(":"):
        return None  # `pressroom worker: …` quotes a line the program prints
    command = typer.main.get_command(app)
    args = words[1:]
    path = ["pressroom"]
    while isinstance(command, TyperGroup) and args and not args[0].startswith("-"):
        sub = command.commands.get(args[0])
        if sub is None:
            return f"{hint.where}: `{hint.text}`: no command {' '.join([*path[1:], args[0]])!r}"
        path.append(args.pop(0))
        command = sub
    # prose lists options as --a/--b: each must exist
    expanded: list[str] = []
    for word in args:
        if word.startswith("--") and "/" in word:
            expanded.extend(part for part in word.split("/") if part)
        else:
            expanded.append(word)
    args = expanded
    known = _option_names(command)
    for word in args:
        if word.startswith("-") and len(word) > 1 and not word[1:2].isdigit():
            name = word.split("=", 1)[0]
            if name not in known:
                return (f"{hint.where}: `{hint.text}`: `{' '.join(path)}` has no option "
                        f"{name}")
    if "--help" in args or isinstance(command, TyperGroup):
        return None  # help, or a group named in prose (`pressroom reviewer`): nothing to parse
    # an amount option (USD, parsed exactly from text) takes a placeholder like a count
    int_options = _int_options(command) | (_AMOUNT_OPTIONS & _options(command))
    args = ["1" if i and args[i - 1] in int_options and _PLACEHOLDER.match(word) else word
            for i, word in enumerate(args)]
    lenient = hint.in_prose or cut
    try:
        ctx = command.make_context(" ".join(path), list(args), resilient_parsing=False)
    except click_errors.MissingParameter:
        if lenient:
            return None
        return f"{hint.where}: `{hint.text}` leaves out a required argument"
    except click_errors.BadOptionUsage as exc:
        if lenient and args and args[-1].startswith("-") and "requires an argument" in str(exc):
            return None  # prose naming an option: `pressroom worker --metrics-port`
        return f"{hint.where}: `{hint.text}`: {exc.format_message()}"
    except click_errors.UsageError as exc:
        return f"{hint.where}: `{hint.text}`: {exc.format_message()}"
    if path[1:] == ["resolve"]:
        return _check_resolution(hint, ctx.params)
    return None


def _check_resolution(hint: Hint, params: dict[str, object]) -> str | None:
    from cli.resolution import build_resolution
    from contracts.errors import JobError

    fields = ("add_source", "refresh", "budget", "context_limit", "accept", "token_budget",
              "cost_budget", "accept_gathered", "abandon", "note")
    try:
        build_resolution(**{k: params[k] for k in fields if k in params})  # type: ignore[arg-type]
    except JobError as exc:
        return f"{hint.where}: `{hint.text}`: {exc}"
    return None


__all__ = ["Hint", "check_hint", "collect_hints"]
