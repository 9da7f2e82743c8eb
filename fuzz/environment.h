/* The machines a report's shards ran on (internal: for fuzz/ and src/cli/). */
#ifndef GEMMCHECK_FUZZ_ENVIRONMENT_H
#define GEMMCHECK_FUZZ_ENVIRONMENT_H

#include <jansson.h>

#include <stdbool.h>

#include "result.h"

/** Append one shard's environment record (a JSON object text; copied). */
bool gck_result_add_environment(gck_campaign_result *r, const char *json_text);
/** Record this machine's environment for the result's own shard (at the end of a campaign:
 *  `started` is its start, seconds since the epoch). */
bool gck_result_capture_environment(gck_campaign_result *r, double started);

/** The fields of an environment record besides "seed" and "shard", in the order written. */
extern const char *const gck_environment_keys[];
extern const size_t gck_environment_nkeys;

/** The shards' records, as an array (a new reference). */
json_t *gck_environment_records(const gck_campaign_result *r);
/** One environment for the whole report: each field's value when every shard has the same,
 *  "mixed" when they differ; the timestamp is the earliest shard's (a new reference). */
json_t *gck_environment_merged(const gck_campaign_result *r);
/** One field of a (merged) environment as text ("unknown" when it is absent, "" for null). */
void gck_environment_field(const json_t *env, const char *key, char *buf, size_t len);

/** Check a parsed record against the schema: an object with a "seed" and "shard" equal to
 *  `seed` and `shard`, every key of gck_environment_keys, a timestamp of the form
 *  YYYY-MM-DDTHH:MM:SSZ. False with the reason in msg. */
bool gck_environment_check(const json_t *rec, const char *seed, const char *shard, char *msg,
                           size_t len);

#endif
