/*
 * schema_impl.h - what the schema loader (schema.c) and printers
 * (schema_print.c) share. Private to them; not a contract.
 *
 * Depends on schema.h.
 */
#ifndef LLMSIM_CONFIG_SCHEMA_IMPL_H
#define LLMSIM_CONFIG_SCHEMA_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "schema.h"

enum schema_parse_status {
	SCHEMA_PARSE_OK = 0,
	SCHEMA_PARSE_BAD = -1,		/* not of the type at all */
	SCHEMA_PARSE_RANGE = -2,	/* the type, but not representable */
	SCHEMA_PARSE_LEADING_ZERO = -3	/* "010": octal in YAML 1.1 */
};

/* Scalar text to a value; enum schema_parse_status. */
int schema_parse_int(const char *s, int64_t *out);
int schema_parse_num(const char *s, double *out);

/* 1 for YAML's spellings of +infinity ('inf' and '.inf', any case of
 * the letters), accepted by ST_NUM fields with SF_INF. */
int schema_is_inf(const char *s);
int schema_parse_bool(const char *s, int *out);

/* Index of s among the field's enum values, or -1. */
int schema_enum_index(const struct schema_field *f, const char *s);

/* v (storage units) within the field's bounds. */
int schema_in_bounds(const struct schema_field *f, double v);

/* What a field expects, with an example ("an integer such as 8",
 * "a bandwidth such as '450 GB/s'", "one of a, b, c"). */
void schema_expect_text(const struct schema_field *f, char *buf, size_t n);

/* The field's type with its bounds ("an integer from 1 to 1024"). */
void schema_range_text(const struct schema_field *f, char *buf, size_t n);

/* The unit kind of a quantity type (ST_BYTES .. ST_FREQ). */
int schema_unit_kind(enum schema_type t);

/* 1 for a type stored as a double in SI units. */
int schema_is_quantity(enum schema_type t);

/* 1 when an absent key leaves the field unset (no default, not
 * required): zero, NULL, or -1 for ST_BOOL and ST_ENUM. */
int schema_is_optional(const struct schema_field *f);

/* 1 when the value at slot is exactly what an absent key produces (the
 * parsed default, or the unset value); sections field by field. */
int schema_at_default(const struct schema_field *f, const void *slot);

/* 1 when the printers leave the field out: an unset optional value, or
 * an SF_OPTIONAL section that is entirely at its defaults. */
int schema_omitted(const struct schema_field *f, const void *slot);

#endif
