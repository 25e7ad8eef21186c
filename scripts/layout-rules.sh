#!/usr/bin/env bash
# Where things live, checked in CI beside scripts/mutual-imports.py:
# - the replay engine's core names no simulator's rules (they are src/replay/semantics/'s);
# - command-line definitions (clap's derives and #[arg]) sit under src/cli/ only; value types
#   a flag takes (clap::ValueEnum) may live with their data.
# Prints each breach and exits 1 when there is one.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
if grep -rniE 'synergy' src/replay/engine/; then
    echo "layout: src/replay/engine/ names Synergy: a simulator's rules belong in src/replay/semantics/" >&2
    status=1
fi
if grep -rnE '#\[arg\(|#\[command\(|derive\([^)]*\b(Args|Parser|Subcommand)\b' src --include=*.rs \
    | grep -v '^src/cli/'; then
    echo "layout: command-line definitions outside src/cli/" >&2
    status=1
fi
exit $status
