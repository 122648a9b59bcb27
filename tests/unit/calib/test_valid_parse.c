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
