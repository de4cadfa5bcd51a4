#ifndef CAIRPLAY_ALSA_SHIM_H
#define CAIRPLAY_ALSA_SHIM_H
// alsa-lib (libasound) for the native ALSA output, opened on its first call (alsa_forwarders.c):
// a box that plays to a file or a GStreamer sink never maps it.
#include <alsa/asoundlib.h>

/// Opens libasound now; NULL when it is loaded, else why not (with what to install).
const char *cairplay_alsa_load(void);
#endif
