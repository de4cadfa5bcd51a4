// Every alsa-lib entry point the Swift code calls, defined under its own name and forwarded to
// libasound.so.2, which is opened by cairplay_alsa_load or the first call. To call another
// alsa-lib function, add its line here (the link fails until it is added).
#include "alsa_shim.h"
#include "lazy_link.h"

static cairplay_lazy_library libasound = CAIRPLAY_LAZY_LIBRARY("libasound.so.2", "libasound2");

const char *cairplay_alsa_load(void) { return cairplay_lazy_open(&libasound); }

CAIRPLAY_LAZY_FORWARD(libasound, int, snd_pcm_open, (snd_pcm_t **pcm, const char *name, snd_pcm_stream_t stream, int mode), (pcm, name, stream, mode))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_pcm_close, (snd_pcm_t *pcm), (pcm))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_pcm_set_params, (snd_pcm_t *pcm, snd_pcm_format_t format, snd_pcm_access_t access, unsigned int channels, unsigned int rate, int soft_resample, unsigned int latency), (pcm, format, access, channels, rate, soft_resample, latency))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_pcm_get_params, (snd_pcm_t *pcm, snd_pcm_uframes_t *buffer_size, snd_pcm_uframes_t *period_size), (pcm, buffer_size, period_size))
CAIRPLAY_LAZY_FORWARD(libasound, snd_pcm_sframes_t, snd_pcm_writei, (snd_pcm_t *pcm, const void *buffer, snd_pcm_uframes_t size), (pcm, buffer, size))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_pcm_avail_delay, (snd_pcm_t *pcm, snd_pcm_sframes_t *availp, snd_pcm_sframes_t *delayp), (pcm, availp, delayp))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_pcm_prepare, (snd_pcm_t *pcm), (pcm))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_pcm_drop, (snd_pcm_t *pcm), (pcm))
CAIRPLAY_LAZY_FORWARD(libasound, snd_pcm_state_t, snd_pcm_state, (snd_pcm_t *pcm), (pcm))
CAIRPLAY_LAZY_FORWARD(libasound, const char *, snd_strerror, (int errnum), (errnum))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_pcm_sw_params_malloc, (snd_pcm_sw_params_t **ptr), (ptr))
CAIRPLAY_LAZY_FORWARD_VOID(libasound, snd_pcm_sw_params_free, (snd_pcm_sw_params_t *obj), (obj))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_pcm_sw_params_current, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params), (pcm, params))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_pcm_sw_params_set_start_threshold, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params, snd_pcm_uframes_t val), (pcm, params, val))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_pcm_sw_params, (snd_pcm_t *pcm, snd_pcm_sw_params_t *params), (pcm, params))
