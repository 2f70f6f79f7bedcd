/*
 * diff.h — `thermap diff OLD_DIR NEW_DIR`: the ranks that two plan
 * directories put on different GPUs, from where to where, and why.
 *
 * Does: read both plan.json files as untrusted input (every rejection is
 * one line naming the file and the JSON path), compare the GPU of every
 * rank (host and UUID when both plans know the UUID, else host and
 * nvidia-smi index), take the reason from NEW's "replan" section when NEW
 * replaces OLD, else derive it from the predicted temperatures. Does not:
 * read the env files, the cluster or the profile, or re-predict anything.
 */
#ifndef THERMAP_DIFF_H
#define THERMAP_DIFF_H

#include "internal.h"

/* Compares the placements of two plan directories. fmt 0 = text, 1 = json.
 * *out: the report (to be freed). Errors: TM_EINPUT (4) for an unreadable,
 * malformed or mismatched plan, with one line naming the file and place. */
int tm_plan_diff(const char *old_dir, const char *new_dir, int fmt,
                 char **out, tm_error *err);

#endif
