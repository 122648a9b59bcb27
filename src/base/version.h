/*
 * version.h - llmsim's version. The build generates gitrev.h, which
 * defines LLMSIM_GIT_REV (short commit id) when built in a git checkout,
 * so builds of the same release can be told apart.
 */
#ifndef LLMSIM_BASE_VERSION_H
#define LLMSIM_BASE_VERSION_H

#include "gitrev.h"

#define LLMSIM_VERSION "0.1.0"

#ifdef LLMSIM_GIT_REV
#define LLMSIM_VERSION_STRING LLMSIM_VERSION "+" LLMSIM_GIT_REV
#else
#define LLMSIM_VERSION_STRING LLMSIM_VERSION
#endif

#endif
