#!/usr/bin/env bash
# The resolved channel in two parts on one warm machine, with the quick WALE checks first:
#   bash scripts/gpu-channel-parts.sh first   # QUICK=1 gpu-wale.sh, then the channel from step 0
#   bash scripts/gpu-channel-parts.sh more    # the channel resumed from the first part's checkpoint
# Each part ends PART_S seconds (default 585) after its start (the WALE checks at most WALE_S
# seconds, default 80, of them; WALE_S=0 leaves them out); the second must run on the machine the first left its
# checkpoint on.
START=$(date +%s)
part=${1:-more}
if [ "$part" = first ] && [ -f dist/wale/murmur.xz ] && [ "${WALE_S:-80}" -gt 0 ]; then
  QUICK=1 timeout --foreground -s TERM "${WALE_S:-80}" bash scripts/gpu-wale.sh
fi
left=$(( ${PART_S:-585} - ($(date +%s) - START) ))
if [ "$part" = first ]; then
  DEADLINE=$left bash scripts/gpu-statistics.sh channel
else
  DEADLINE=$left bash scripts/gpu-statistics.sh channel-more
fi
