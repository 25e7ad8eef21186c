#!/usr/bin/env python3
"""Objects that grew past what one owner can hold:

- a struct holding a component's working state with more than 20 fields (records, table rows,
  summaries, options, argument and configuration structs are exempt: those that derive serde's
  or clap's traits, or whose names end in one of EXEMPT_SUFFIXES);
- a type whose inherent `impl` blocks sit in more than 4 files.

    scripts/object-sizes.py [SRC_DIR]     # default: the crate's src/

Test modules (`mod tests`, `tests.rs`) are left out. Exits 1 when it finds one.
"""
import os
import re
import sys

MAX_FIELDS = 20
MAX_IMPL_FILES = 4
EXEMPT_SUFFIXES = (
    "Options", "Args", "Arg", "Config", "Row", "Record", "Summary", "Spec", "Ctx", "Report",
    "Header", "Outcome", "Info", "Stats",
)
EXEMPT_DERIVES = ("Serialize", "Deserialize", "Args", "Parser", "Subcommand")

STRUCT = re.compile(r"^(?P<indent>\s*)(?:pub(?:\([^)]*\))?\s+)?struct\s+(?P<name>[A-Z]\w*)[^;{(]*\{", re.M)
IMPL = re.compile(r"^\s*impl(?:<[^{]*?>)?\s+(?P<name>[A-Z]\w*)(?:<[^{]*>)?\s*(?:where[^{]*)?\{", re.M)


def without_tests(text):
    """The text before a `#[cfg(test)] mod tests` block (they sit at the end of a file)."""
    at = re.search(r"^#\[cfg\(test\)\]\s*\n\s*mod tests\b", text, re.M)
    return text[: at.start()] if at else text


def body(text, open_at):
    """The text between the brace at `open_at` and its match."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[open_at + 1 : i]
    return text[open_at + 1 :]


def fields(block):
    """Named fields at the top level of a struct body."""
    depth, count = 0, 0
    for line in block.splitlines():
        stripped = line.strip()
        if depth == 0 and re.match(r"(pub(\([^)]*\))?\s+)?[a-z_][a-z0-9_]*\s*:", stripped):
            count += 1
        depth += line.count("{") + line.count("(") + line.count("<") - line.count("}") - line.count(")") - line.count(">") + line.count("->")
        depth = max(depth, 0)
    return count


def derives_before(text, at):
    """The derive list and attributes just above the struct starting at `at`."""
    head = text[max(0, at - 600) : at]
    attrs = []
    for line in reversed(head.splitlines()):
        s = line.strip()
        if s.startswith("#[") or s.startswith("///") or s.startswith("//") or not s:
            attrs.append(s)
            continue
        break
    return " ".join(attrs)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src")
    root = os.path.normpath(root)
    big, impl_files = [], {}
    for folder, _, names in os.walk(root):
        for name in sorted(names):
            if not name.endswith(".rs") or name == "tests.rs":
                continue
            path = os.path.join(folder, name)
            text = without_tests(open(path, encoding="utf-8").read())
            for m in STRUCT.finditer(text):
                struct = m.group("name")
                attrs = derives_before(text, m.start())
                if struct.endswith(EXEMPT_SUFFIXES) or any(
                    re.search(rf"\b{d}\b", a) for a in [attrs] for d in EXEMPT_DERIVES
                ):
                    continue
                n = fields(body(text, m.end() - 1))
                if n > MAX_FIELDS:
                    big.append(f"{os.path.relpath(path, root)}: struct {struct} has {n} fields (at most {MAX_FIELDS})")
            for m in IMPL.finditer(text):
                impl_files.setdefault(m.group("name"), set()).add(os.path.relpath(path, root))
    spread = [
        f"{name}: inherent impl blocks in {len(files)} files (at most {MAX_IMPL_FILES}): {', '.join(sorted(files))}"
        for name, files in sorted(impl_files.items())
        if len(files) > MAX_IMPL_FILES
    ]
    for line in big + spread:
        print(line)
    return 1 if big or spread else 0


if __name__ == "__main__":
    sys.exit(main())
