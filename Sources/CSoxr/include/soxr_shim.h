#ifndef CAIRPLAY_SOXR_SHIM_H
#define CAIRPLAY_SOXR_SHIM_H
// libsoxr, the resampler behind `audio_drift_correction = "resample"`, opened on its first call
// (soxr_forwarders.c): a box that stuffs frames (the default) never maps it.
#include <soxr.h>

/// Opens libsoxr now; NULL when it is loaded, else why not (with what to install).
const char *cairplay_soxr_load(void);
#endif
