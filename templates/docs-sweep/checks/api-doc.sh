#!/usr/bin/env bash
# API doc check (templates/docs-sweep): DOC documents exactly the exports of SOURCE, each under its own `## name`
# heading with at least one line of text, and holds no heading for a name SOURCE does not export.
# usage: bash checks/api-doc.sh SOURCE DOC
# Exports are read from lines starting `export function|async function|const|let|class NAME` (JavaScript/TypeScript);
# adapt the pattern below for other languages.
set -euo pipefail
src=${1:?usage: api-doc.sh SOURCE DOC}
doc=${2:?usage: api-doc.sh SOURCE DOC}
[ -f "$src" ] || { echo "api-doc.sh: $src does not exist"; exit 1; }
[ -s "$doc" ] || { echo "api-doc.sh: $doc is missing or empty"; exit 1; }

mapfile -t exported < <(sed -nE 's/^export +(default +)?(async +)?(function\*?|const|let|class) +([A-Za-z_$][A-Za-z0-9_$]*).*/\4/p' "$src" | sort -u)
[ "${#exported[@]}" -gt 0 ] || { echo "api-doc.sh: $src exports nothing this check can read"; exit 1; }
# `## name`, `## \`name\``, `## name(args)`: the name is the heading's first word, backticks and arguments dropped.
mapfile -t headed < <(sed -nE 's/^## +`?([A-Za-z_$][A-Za-z0-9_$]*).*/\1/p' "$doc" | sort)

bad=0
for name in "${exported[@]}"; do
  printf '%s\n' "${headed[@]}" | grep -qxF -- "$name" || { echo "$doc: no '## $name' section for an export of $src"; bad=1; }
done
for name in "${headed[@]}"; do
  printf '%s\n' "${exported[@]}" | grep -qxF -- "$name" || { echo "$doc: '## $name' documents something $src does not export"; bad=1; }
done
dups=$(printf '%s\n' "${headed[@]}" | uniq -d)
[ -z "$dups" ] || { echo "$doc: more than one section for: $dups"; bad=1; }
# Every `## ` section holds at least one line that is not blank and not a heading.
awk -v doc="$doc" '
  /^## / { if (name != "" && !body) { print doc ": section \"" name "\" is empty"; bad = 1 } name = $0; body = 0; next }
  /^#/ { next }
  NF { body = 1 }
  END { if (name != "" && !body) { print doc ": section \"" name "\" is empty"; bad = 1 } exit bad }
' "$doc" || bad=1
[ "$bad" = 0 ] || exit 1
echo "api-doc.sh: $doc documents the ${#exported[@]} export(s) of $src"
