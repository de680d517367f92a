#!/usr/bin/env bash
# Research report check (templates/research): REPORT has the sections `## Answer`, `## Evidence` and `## Open questions`,
# each non-empty, and its Evidence section cites at least MIN places in the repository as lines of the form
#   - `path/to/file:LINE` "text copied from that line"
# where the file exists (inside this folder, not the report itself), LINE is one of its lines and that line holds the
# quoted text (at least 8 characters). A citation that does not hold is printed and fails the check.
# usage: bash checks/report.sh REPORT [MIN]
set -euo pipefail
report=${1:?usage: report.sh REPORT [MIN]}
min=${2:-3}
[ -s "$report" ] || { echo "report.sh: $report is missing or empty"; exit 1; }

section() { awk -v h="## $1" '$0 == h { on = 1; next } /^## / { on = 0 } on' "$report"; }
bad=0
for h in Answer Evidence 'Open questions'; do
  grep -qxF "## $h" "$report" || { echo "report.sh: $report has no '## $h' section"; bad=1; continue; }
  [ -n "$(section "$h" | tr -d '[:space:]')" ] || { echo "report.sh: '## $h' is empty"; bad=1; }
done
[ "$bad" = 0 ] || exit 1

citation='^- `([^`:]+):([0-9]+)` "(.+)"$'
good=0
while IFS= read -r line; do
  [[ $line == '- '* ]] || continue
  if ! [[ $line =~ $citation ]]; then echo "report.sh: not a citation (- \`path:LINE\` \"quote\"): $line"; bad=1; continue; fi
  file=${BASH_REMATCH[1]} n=${BASH_REMATCH[2]} quote=${BASH_REMATCH[3]}
  case $file in /* | *..*) echo "report.sh: $file: cite files inside the repository, by relative path"; bad=1; continue ;; esac
  [ "$file" != "$report" ] || { echo "report.sh: the report cites itself: $line"; bad=1; continue; }
  [ -f "$file" ] || { echo "report.sh: $file:$n: no such file"; bad=1; continue; }
  [ "${#quote}" -ge 8 ] || { echo "report.sh: $file:$n: quote under 8 characters: \"$quote\""; bad=1; continue; }
  text=$(sed -n "${n}p" "$file")
  if [[ $text == *"$quote"* ]]; then good=$((good + 1)); else echo "report.sh: $file:$n does not hold \"$quote\" (it reads: $text)"; bad=1; fi
done < <(section Evidence)
[ "$bad" = 0 ] || exit 1
[ "$good" -ge "$min" ] || { echo "report.sh: $good citation(s) in '## Evidence', at least $min needed"; exit 1; }
echo "report.sh: $report has its sections and $good checked citation(s)"
