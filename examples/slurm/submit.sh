#!/bin/bash
# Submits the campaign array and, after all its tasks end (whatever their status), the merge.
set -euo pipefail
here=$(dirname "$0")
array=$(sbatch --parsable "$here/campaign.sbatch")
sbatch --dependency="afterany:${array%%;*}" "$here/merge.sbatch"
