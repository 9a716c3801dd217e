#!/usr/bin/env bash
# Each step of a CI run against its time budget: reads the log `.ci/run` writes (its
# `== ci step at +Ns (...): NAME` lines), takes each step's seconds as the gap to the next step's
# start, and compares them with the budgets in CONTRIBUTING.md's "CI time budget" table (rows
# "| `NAME` | SECONDS | ..."; the row `whole run` is the total). A step over its budget is
# printed loudly; it never fails the run: the machines are noisy, and the hard limit is the
# platform's. .ci/run calls it last.
# Usage: scripts/ci-budget.sh CI_LOG [BUDGETS_MD]
set -euo pipefail
log="${1:?usage: scripts/ci-budget.sh CI_LOG [BUDGETS_MD]}"
budgets="${2:-$(dirname "$0")/../CONTRIBUTING.md}"
if [ ! -f "$log" ] || [ ! -f "$budgets" ]; then
  echo "ci-budget: no such file: $([ -f "$log" ] && echo "$budgets" || echo "$log")" >&2
  exit 2
fi
awk -v budgets="$budgets" '
  BEGIN {
    while ((getline line < budgets) > 0) {
      if (line ~ /^\| *`[^`]+` *\| *[0-9]+ *\|/) {
        split(line, cell, "|")
        name = cell[2]; gsub(/^ *`|` *$/, "", name)
        seconds = cell[3]; gsub(/ /, "", seconds)
        budget[name] = seconds + 0
      }
    }
    if (length(budget) == 0) { print "ci-budget: " budgets " has no budget rows"; exit 2 }
  }
  /^== ci step at \+[0-9]+s/ {
    at = $5; gsub(/[+s]/, "", at)
    name = $0; sub(/^[^)]*\): /, "", name)
    n++; start[n] = at + 0; step[n] = name
  }
  END {
    if (n == 0) { print "ci-budget: the log has no \"== ci step\" lines"; exit 2 }
    over = 0
    printf "== CI time against the budgets in %s\n", budgets
    printf "%8s %8s  %s\n", "took (s)", "budget", "step"
    for (i = 1; i < n; i++) {
      took = start[i + 1] - start[i]
      b = (step[i] in budget) ? budget[step[i]] : -1
      mark = ""
      if (b < 0) mark = "   (no budget: add a row to the table)"
      else if (took > b) { mark = sprintf("   <<<<< OVER BUDGET by %d s", took - b); over++ }
      printf "%8d %8s  %s%s\n", took, (b < 0 ? "-" : b), step[i], mark
    }
    total = start[n]
    b = ("whole run" in budget) ? budget["whole run"] : -1
    mark = (b >= 0 && total > b) ? sprintf("   <<<<< OVER BUDGET by %d s", total - b) : ""
    if (mark != "") over++
    printf "%8d %8s  %s%s\n", total, (b < 0 ? "-" : b), "whole run (to \"" step[n] "\")", mark
    if (over > 0) printf "ci-budget: WARNING: %d step(s) over budget (a warning, not a failure)\n", over
    else print "ci-budget: every step within its budget"
  }
' "$log"
