/*
 * quick.h - the .timeout of a test that guards against an algorithm gone
 * slow again (seconds or minutes where it takes milliseconds).
 *
 * Criterion's timer runs until the test's worker process has exited, not
 * until the test body returns: under `make check` that includes
 * AddressSanitizer's start-up and LeakSanitizer's scan of the worker at
 * exit, which on a loaded machine (2 cores, load 9) outlasted a 1 s or
 * 2 s timeout after the test had reported its end, and Criterion 2.4.1
 * then aborts the whole run ("The test has already ended, invalid state
 * 'timeout'", make check rc 2, twice in round 31). So under a sanitizer
 * the guard is 30 times wider: still far below the minutes it guards
 * against; without one it is the test's own.
 */
#ifndef LLMSIM_TESTS_QUICK_H
#define LLMSIM_TESTS_QUICK_H

#if defined(__SANITIZE_ADDRESS__)
#define QUICK_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QUICK_SANITIZED 1
#endif
#endif

#ifdef QUICK_SANITIZED
#define QUICK_TIMEOUT(s) ((s) * 30.0)
#else
#define QUICK_TIMEOUT(s) (s)
#endif

#endif
