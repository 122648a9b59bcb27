/*
 * test_valid_parse.c - a reference table's measured value
 * (valid_parse_measured): the whole field a finite number above 0. With
 * atof, '9026 tok/s' read as 9026 and 'inf' as a measurement that put
 * the row at -100 % (predicted / inf - 1).
 */
#include <criterion/criterion.h>
#include <math.h>

#include "calib/valid.h"

Test(valid_parse, measured_values)
{
	double x = -1;

	cr_assert(valid_parse_measured("9026", &x));
	cr_assert_float_eq(x, 9026, 0);
	cr_assert(valid_parse_measured(" 1.5e-3\n", &x));
	cr_assert_float_eq(x, 1.5e-3, 0);
	x = -1;
	cr_assert_not(valid_parse_measured("9026 tok/s", &x));
	cr_assert_not(valid_parse_measured("inf", &x));
	cr_assert_not(valid_parse_measured("1e400", &x));
	cr_assert_not(valid_parse_measured("nan", &x));
	cr_assert_not(valid_parse_measured("0", &x));
	cr_assert_not(valid_parse_measured("-3", &x));
	cr_assert_not(valid_parse_measured("", &x));
	cr_assert_not(valid_parse_measured(NULL, &x));
	cr_assert_float_eq(x, -1, 0);	/* untouched when refused */
}

/* The other numbers of a table (valid_parse_number): the whole field,
 * finite, >= lo, an integer when asked. atol read '1e3' ranks as 1 and
 * atof '4096x' tokens as 4096. */
Test(valid_parse, other_numbers)
{
	double x = -1;

	cr_assert(valid_parse_number("1e3", 0, 1, &x));
	cr_assert_float_eq(x, 1000, 0);	/* 1e3 is whole: 1000, not atol's 1 */
	cr_assert(valid_parse_number(" 0 ", 0, 1, &x));
	cr_assert_float_eq(x, 0, 0);	/* 0 allowed at lo 0 (busbw 0.00) */
	cr_assert(valid_parse_number("12.25", 0, 0, &x));
	cr_assert_float_eq(x, 12.25, 0);
	x = -1;
	cr_assert_not(valid_parse_number("12.25", 0, 1, &x));	/* not whole */
	cr_assert_not(valid_parse_number("4096x", 0, 1, &x));
	cr_assert_not(valid_parse_number("0", 1, 1, &x));	/* below lo */
	cr_assert_not(valid_parse_number("-1", 0, 0, &x));
	cr_assert_not(valid_parse_number("nan", 0, 0, &x));
	cr_assert_not(valid_parse_number("inf", 0, 0, &x));
	cr_assert_not(valid_parse_number("1e999", 0, 0, &x));
	cr_assert_not(valid_parse_number("", 0, 0, &x));
	cr_assert_not(valid_parse_number(NULL, 0, 0, &x));
	cr_assert_float_eq(x, -1, 0);	/* untouched when refused */
}
