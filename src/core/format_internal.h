/* The value functions of gemmcheck/format.h without their floating-point environment guard
 * (internal). gemmcheck's own code runs in the default environment (src/util/fpenv.h): inside
 * the guard of the public function that was called, or in the command line tool, which never
 * leaves it. These are the same functions, called per element and per product where a guard's
 * test (about 5 ns) would double their cost. */
#ifndef GEMMCHECK_FORMAT_INTERNAL_H
#define GEMMCHECK_FORMAT_INTERNAL_H

#include "gemmcheck/format.h"

double gck_fmt_round_to(double x, gck_format fmt);
double gck_fmt_round2_to(double hi, double lo, gck_format fmt);
double gck_fmt_f16_to_double(uint16_t h);
float gck_fmt_f16_to_float(uint16_t h);
uint16_t gck_fmt_f16_from_double(double x);
uint16_t gck_fmt_f16_from_float(float x);
double gck_fmt_bf16_to_double(uint16_t h);
uint16_t gck_fmt_bf16_from_double(double x);
uint16_t gck_fmt_bf16_from_float(float x);
gck_class gck_fmt_classify(double x, gck_format fmt);
double gck_fmt_ulp(double x, gck_format fmt);
double gck_fmt_next_up(double x, gck_format fmt);
double gck_fmt_next_down(double x, gck_format fmt);
double gck_fmt_load(const void *base, gck_format fmt, int64_t index);
void gck_fmt_store(void *base, gck_format fmt, int64_t index, double x);

#endif
