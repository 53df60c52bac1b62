"""Quoting for the files other programs read: <stack>/env (sourced by shells, parsed by
scripts/lib/backup-common.sh and the tests) and <stack>/run/config (bash's `printf %q`, sourced by bash
in scripts/bench and Tests/stack/fresh_stack.py, read back here by parse_config_text)."""
from __future__ import annotations

import re
import unicodedata
import urllib.parse

_PLAIN = re.compile(r"[A-Za-z0-9_./:@%+=,-]*\Z")


def shell_quote(value: str) -> str:
    """VALUE for the env file: bare when it is plainly safe, otherwise single-quoted."""
    if _PLAIN.match(value):
        return value
    return "'" + value.replace("'", "'\\''") + "'"


def sql_literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def url_encode(value: str) -> str:
    """Every byte but A-Z a-z 0-9 . _ ~ - as %XX (UTF-8)."""
    return urllib.parse.quote(value, safe="")


# The characters bash's `printf %q` escapes with a backslash (bash's lib/sh/shquote.c table).
_BACKSLASHED = set(" \t\n'\"\\|&;()<>!{}*[?]^$`,")
_ANSI_C_ESCAPES = {"\x1b": "E", "\a": "a", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t", "\v": "v",
                   "\\": "\\", "'": "'"}


def _printable(char: str) -> bool:
    """As the C library's iswprint in a UTF-8 locale: format characters and other spaces count."""
    if char < "\x80":
        return " " <= char <= "~"
    return unicodedata.category(char) not in ("Cc", "Cs", "Cn", "Zl", "Zp")


def bash_q(value: str) -> str:
    """What bash's `printf %q` prints for VALUE (in a UTF-8 locale): '' for the empty string, $'...'
    when VALUE has an unprintable character, otherwise VALUE with the shell's special characters
    backslash-escaped."""
    if value == "":
        return "''"
    if not all(_printable(c) for c in value):
        out = ["$'"]
        for char in value:
            if char in _ANSI_C_ESCAPES:
                out.append("\\" + _ANSI_C_ESCAPES[char])
            elif _printable(char):
                out.append(char)
            else:
                out.extend(f"\\{byte:03o}" for byte in char.encode("utf-8", "surrogateescape"))
        out.append("'")
        return "".join(out)
    out = []
    for i, char in enumerate(value):
        if (char in _BACKSLASHED or (char == "#" and i == 0)
                or (char == "~" and (i == 0 or value[i - 1] in ":="))):
            out.append("\\")
        out.append(char)
    return "".join(out)


class ParseError(ValueError):
    pass


_SIMPLE_ANSI = {"a": 7, "b": 8, "e": 27, "E": 27, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11,
                "\\": 92, "'": 39, '"': 34, "?": 63}


def _ansi_c(text: str, i: int) -> tuple[bytes, int]:
    """The body of $'...' from text[i] (after the opening quote) to the closing quote."""
    out = bytearray()
    while i < len(text):
        char = text[i]
        if char == "'":
            return bytes(out), i + 1
        if char != "\\":
            out += char.encode("utf-8", "surrogateescape")
            i += 1
            continue
        i += 1
        if i >= len(text):
            break
        char = text[i]
        if char in _SIMPLE_ANSI:
            out.append(_SIMPLE_ANSI[char])
            i += 1
        elif char in "01234567":
            digits = re.match(r"[0-7]{1,3}", text[i:]).group(0)
            out.append(int(digits, 8) & 0xFF)
            i += len(digits)
        elif char == "x" and re.match(r"[0-9A-Fa-f]", text[i + 1:i + 2]):
            digits = re.match(r"[0-9A-Fa-f]{1,2}", text[i + 1:]).group(0)
            out.append(int(digits, 16))
            i += 1 + len(digits)
        elif char in "uU" and re.match(r"[0-9A-Fa-f]", text[i + 1:i + 2]):
            digits = re.match(r"[0-9A-Fa-f]{1,%d}" % (4 if char == "u" else 8), text[i + 1:]).group(0)
            out += chr(int(digits, 16)).encode("utf-8", "surrogateescape")
            i += 1 + len(digits)
        elif char == "c" and i + 1 < len(text):
            out.append(ord(text[i + 1]) & 0x1F)
            i += 2
        else:
            out += ("\\" + char).encode("utf-8", "surrogateescape")
            i += 1
    raise ParseError("unterminated $'...'")


def parse_word(text: str, i: int = 0, stop: str = "") -> tuple[str, int]:
    """One shell word of TEXT from index I, as bash reads a word of printf %q output (backslashes,
    '...', $'...', "..."; no expansions); ends at unquoted whitespace or a character of STOP.
    Returns the word and the index after it."""
    out: list[str] = []
    while i < len(text):
        char = text[i]
        if char in " \t\n" or char in stop:
            break
        if char == "\\":
            if i + 1 >= len(text):
                raise ParseError("backslash at the end")
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
        elif char == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise ParseError("unterminated '...'")
            out.append(text[i + 1:end])
            i = end + 1
        elif char == "$" and text[i + 1:i + 2] == "'":
            raw, i = _ansi_c(text, i + 2)
            out.append(raw.decode("utf-8", "surrogateescape"))
        elif char == '"':
            i += 1
            while True:
                if i >= len(text):
                    raise ParseError('unterminated "..."')
                char = text[i]
                if char == '"':
                    i += 1
                    break
                if char == "\\" and text[i + 1:i + 2] in ('$', '`', '"', '\\', '\n'):
                    if text[i + 1] != "\n":
                        out.append(text[i + 1])
                    i += 2
                else:
                    out.append(char)
                    i += 1
        else:
            out.append(char)
            i += 1
    return "".join(out), i


_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=")


def parse_config_text(text: str) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The variables and arrays of a run/config file: `NAME=WORD`, `NAME=()` and `NAME+=(WORD ...)`
    lines (what save_config writes, and what the bash version of scripts/stack wrote)."""
    scalars: dict[str, str] = {}
    arrays: dict[str, list[str]] = {}
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _ASSIGNMENT.match(stripped)
        if not match:
            raise ParseError(f"line {number}: not an assignment")
        name, append = match.group(1), match.group(2) == "+"
        rest = stripped[match.end():]
        if rest.startswith("("):
            items: list[str] = []
            i = 1
            while True:
                while i < len(rest) and rest[i] in " \t":
                    i += 1
                if i >= len(rest):
                    raise ParseError(f"line {number}: unterminated (...)")
                if rest[i] == ")":
                    break
                word, i = parse_word(rest, i, stop=")")
                items.append(word)
            arrays[name] = (arrays.get(name, []) if append else []) + items
            scalars.pop(name, None)
        else:
            word, i = parse_word(rest)
            if rest[i:].strip():
                raise ParseError(f"line {number}: more than one word")
            scalars[name] = (scalars.get(name, "") if append else "") + word
    return scalars, arrays
