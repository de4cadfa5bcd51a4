#ifndef SIMULATED_SOUND_CARD_H
#define SIMULATED_SOUND_CARD_H
// The simulated sound card is loaded by alsa-lib from a test's asoundrc (`pcm_type.simcard`,
// `ctl_type.simcard`), which looks up its entry points by name: nothing here is called from Swift.
#include <alsa/asoundlib.h>

/// Opens a `type simcard` PCM (alsa-lib's SND_PCM_PLUGIN_DEFINE_FUNC(simcard)).
int _snd_pcm_simcard_open(snd_pcm_t **pcmp, const char *name, snd_config_t *root, snd_config_t *conf,
                          snd_pcm_stream_t stream, int mode);

/// Opens a `type simcard` control, the card's mixer (alsa-lib's SND_CTL_PLUGIN_DEFINE_FUNC(simcard)).
int _snd_ctl_simcard_open(snd_ctl_t **handlep, const char *name, snd_config_t *root, snd_config_t *conf, int mode);
#endif
