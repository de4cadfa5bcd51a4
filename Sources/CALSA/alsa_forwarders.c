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
// The card's mixer (ALSAMixer).
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_mixer_open, (snd_mixer_t **mixer, int mode), (mixer, mode))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_mixer_close, (snd_mixer_t *mixer), (mixer))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_mixer_attach, (snd_mixer_t *mixer, const char *name), (mixer, name))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_mixer_selem_register, (snd_mixer_t *mixer, struct snd_mixer_selem_regopt *options, snd_mixer_class_t **classp), (mixer, options, classp))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_mixer_load, (snd_mixer_t *mixer), (mixer))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_mixer_selem_id_malloc, (snd_mixer_selem_id_t **ptr), (ptr))
CAIRPLAY_LAZY_FORWARD_VOID(libasound, snd_mixer_selem_id_free, (snd_mixer_selem_id_t *obj), (obj))
CAIRPLAY_LAZY_FORWARD_VOID(libasound, snd_mixer_selem_id_set_index, (snd_mixer_selem_id_t *obj, unsigned int val), (obj, val))
CAIRPLAY_LAZY_FORWARD_VOID(libasound, snd_mixer_selem_id_set_name, (snd_mixer_selem_id_t *obj, const char *val), (obj, val))
CAIRPLAY_LAZY_FORWARD(libasound, snd_mixer_elem_t *, snd_mixer_find_selem, (snd_mixer_t *mixer, const snd_mixer_selem_id_t *id), (mixer, id))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_mixer_selem_has_playback_volume, (snd_mixer_elem_t *elem), (elem))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_mixer_selem_has_playback_switch, (snd_mixer_elem_t *elem), (elem))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_mixer_selem_get_playback_dB_range, (snd_mixer_elem_t *elem, long *min, long *max), (elem, min, max))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_mixer_selem_get_playback_volume_range, (snd_mixer_elem_t *elem, long *min, long *max), (elem, min, max))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_mixer_selem_set_playback_dB_all, (snd_mixer_elem_t *elem, long value, int dir), (elem, value, dir))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_mixer_selem_set_playback_volume_all, (snd_mixer_elem_t *elem, long value), (elem, value))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_mixer_selem_set_playback_switch_all, (snd_mixer_elem_t *elem, int value), (elem, value))
// The configuration tree (ALSAConfiguration): is a PCM defined.
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_config_update_ref, (snd_config_t **top), (top))
CAIRPLAY_LAZY_FORWARD(libasound, int, snd_config_search, (snd_config_t *config, const char *key, snd_config_t **result), (config, key, result))
CAIRPLAY_LAZY_FORWARD_VOID(libasound, snd_config_unref, (snd_config_t *top), (top))
