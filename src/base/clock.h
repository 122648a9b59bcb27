/*
 * clock.h - wall time for progress lines and timings (never for model
 * time, which is the engine's integer ns).
 */
#ifndef LLMSIM_BASE_CLOCK_H
#define LLMSIM_BASE_CLOCK_H

/* Seconds on the monotonic clock, from an arbitrary origin. */
double clock_mono_s(void);

#endif
