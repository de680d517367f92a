#!/usr/bin/env bash
# The validator's check: validation.md judges every worker folder of $VERDICT_INPUTS and ends with a verdict naming one.
set -u
report=validation.md
test -s "$report" || { echo "$report is missing or empty"; exit 1; }
status=0
for dir in "$VERDICT_INPUTS"/*/; do
  name=$(basename "$dir")
  grep -Eq "^$name: (keep|reject) — .+" "$report" || { echo "$report has no line '$name: keep|reject — reason' for worker folder $name"; status=1; }
done
last=$(grep -v '^[[:space:]]*$' "$report" | tail -n 1)
[[ "$last" =~ ^verdict:\ ([A-Z])$ ]] || { echo "the last line of $report must be 'verdict: <letter>', not '$last'"; exit 1; }
test -d "$VERDICT_INPUTS/${BASH_REMATCH[1]}" || { echo "the verdict names ${BASH_REMATCH[1]}, which is no worker folder"; exit 1; }
exit $status
