// The simulated sound card's mixer: an alsa-lib external control (ctl_ext) with the two
// elements a USB DAC's "PCM" control has, so `alsa_mixer = "PCM"` has something to set:
//
//   "PCM Playback Volume"  integer, 2 channels, 0..255, on a dB scale of -51.00 dB to 0 dB in
//                          0.20 dB steps (its TLV), as many USB DACs report
//   "PCM Playback Switch"  boolean, 2 channels (off mutes)
//
// Every write is recorded in RECORD.mixer, rewritten whole: `volume L R switch L R`, so a test
// reads what the card was set to. The card's samples are recorded before this mixer (RECORD.pcm
// is what reached the card), which is what a bit-perfect path is judged by.
//
// Loaded from a test's own asoundrc, beside the PCM:
//   ctl_type.simcard { lib "/path/to/libasound_module_pcm_simcard.so" }
//   ctl.room { type simcard record "/tmp/x/room" }
#include "simulated_sound_card.h"
#include <alsa/control_external.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { VOLUME, SWITCH, ELEMENTS };
static const char *const element_names[ELEMENTS] = {"PCM Playback Volume", "PCM Playback Switch"};
static const long volume_max = 255;
// SND_CTL_TLVT_DB_SCALE: its minimum in 0.01 dB (-51.00 dB) and its step (0.20 dB).
static const unsigned int db_scale[] = {SND_CTL_TLVT_DB_SCALE, 2 * sizeof(unsigned int), (unsigned int)-5100, 20};

typedef struct {
    snd_ctl_ext_t ext;
    char *mixer_path;
    long volume[2];
    long on[2];
} simmixer_t;

static void save(const simmixer_t *mixer) {
    if (mixer->mixer_path == NULL) return;
    FILE *file = fopen(mixer->mixer_path, "w");
    if (file == NULL) return;
    fprintf(file, "volume %ld %ld switch %ld %ld\n", mixer->volume[0], mixer->volume[1], mixer->on[0], mixer->on[1]);
    fclose(file);
}

static void load(simmixer_t *mixer) {
    mixer->volume[0] = mixer->volume[1] = volume_max;
    mixer->on[0] = mixer->on[1] = 1;
    FILE *file = mixer->mixer_path ? fopen(mixer->mixer_path, "r") : NULL;
    if (file == NULL) return;
    long values[4];
    if (fscanf(file, "volume %ld %ld switch %ld %ld", &values[0], &values[1], &values[2], &values[3]) == 4) {
        mixer->volume[0] = values[0], mixer->volume[1] = values[1], mixer->on[0] = values[2], mixer->on[1] = values[3];
    }
    fclose(file);
}

static void mixer_close(snd_ctl_ext_t *ext) {
    simmixer_t *mixer = ext->private_data;
    free(mixer->mixer_path);
    free(mixer);
}

static int elem_count(snd_ctl_ext_t *ext) { (void)ext; return ELEMENTS; }

static int elem_list(snd_ctl_ext_t *ext, unsigned int offset, snd_ctl_elem_id_t *id) {
    (void)ext;
    if (offset >= ELEMENTS) return -EINVAL;
    snd_ctl_elem_id_set_interface(id, SND_CTL_ELEM_IFACE_MIXER);
    snd_ctl_elem_id_set_name(id, element_names[offset]);
    return 0;
}

static snd_ctl_ext_key_t find_elem(snd_ctl_ext_t *ext, const snd_ctl_elem_id_t *id) {
    (void)ext;
    const char *name = snd_ctl_elem_id_get_name(id);
    for (unsigned int index = 0; index < ELEMENTS; index++) {
        if (strcmp(name, element_names[index]) == 0) return index;
    }
    return SND_CTL_EXT_KEY_NOT_FOUND;
}

static int get_attribute(snd_ctl_ext_t *ext, snd_ctl_ext_key_t key, int *type, unsigned int *access, unsigned int *count) {
    (void)ext;
    if (key >= ELEMENTS) return -EINVAL;
    *type = key == VOLUME ? SND_CTL_ELEM_TYPE_INTEGER : SND_CTL_ELEM_TYPE_BOOLEAN;
    *access = SND_CTL_EXT_ACCESS_READWRITE | (key == VOLUME ? SND_CTL_EXT_ACCESS_TLV_READ : 0);
    *count = 2;
    return 0;
}

static int get_integer_info(snd_ctl_ext_t *ext, snd_ctl_ext_key_t key, long *low, long *high, long *step) {
    (void)ext;
    *low = 0, *high = key == VOLUME ? volume_max : 1, *step = 1;
    return 0;
}

static int read_integer(snd_ctl_ext_t *ext, snd_ctl_ext_key_t key, long *value) {
    simmixer_t *mixer = ext->private_data;
    const long *values = key == VOLUME ? mixer->volume : mixer->on;
    value[0] = values[0], value[1] = values[1];
    return 0;
}

static int write_integer(snd_ctl_ext_t *ext, snd_ctl_ext_key_t key, long *value) {
    simmixer_t *mixer = ext->private_data;
    long *values = key == VOLUME ? mixer->volume : mixer->on;
    long high = key == VOLUME ? volume_max : 1;
    int changed = 0;
    for (int channel = 0; channel < 2; channel++) {
        if (value[channel] < 0 || value[channel] > high) return -EINVAL;
        changed |= values[channel] != value[channel];
        values[channel] = value[channel];
    }
    save(mixer);
    return changed;
}

static int read_event(snd_ctl_ext_t *ext, snd_ctl_elem_id_t *id, unsigned int *mask) {
    (void)ext, (void)id, (void)mask;
    return -EAGAIN;
}

static const snd_ctl_ext_callback_t callbacks = {
    .close = mixer_close,
    .elem_count = elem_count,
    .elem_list = elem_list,
    .find_elem = find_elem,
    .get_attribute = get_attribute,
    .get_integer_info = get_integer_info,
    .read_integer = read_integer,
    .write_integer = write_integer,
    .read_event = read_event,
};

SND_CTL_PLUGIN_DEFINE_FUNC(simcard) {
    (void)root;
    const char *record = NULL;
    snd_config_iterator_t i, next;
    snd_config_for_each(i, next, conf) {
        snd_config_t *entry = snd_config_iterator_entry(i);
        const char *id;
        if (snd_config_get_id(entry, &id) < 0) continue;
        if (strcmp(id, "comment") == 0 || strcmp(id, "type") == 0 || strcmp(id, "hint") == 0) continue;
        if (strcmp(id, "record") == 0) {
            if (snd_config_get_string(entry, &record) < 0) return -EINVAL;
            continue;
        }
        SNDERR("simcard mixer: unknown field %s", id);
        return -EINVAL;
    }
    simmixer_t *mixer = calloc(1, sizeof(*mixer));
    if (mixer == NULL) return -ENOMEM;
    if (record != NULL) {
        size_t length = strlen(record) + sizeof(".mixer");
        mixer->mixer_path = malloc(length);
        if (mixer->mixer_path) snprintf(mixer->mixer_path, length, "%s.mixer", record);
    }
    load(mixer);
    mixer->ext.version = SND_CTL_EXT_VERSION;
    mixer->ext.card_idx = 0;
    strncpy(mixer->ext.id, "simcard", sizeof(mixer->ext.id) - 1);
    strncpy(mixer->ext.driver, "simcard", sizeof(mixer->ext.driver) - 1);
    strncpy(mixer->ext.name, "Simulated card", sizeof(mixer->ext.name) - 1);
    strncpy(mixer->ext.longname, "Simulated sound card (tests)", sizeof(mixer->ext.longname) - 1);
    strncpy(mixer->ext.mixername, "Simulated mixer", sizeof(mixer->ext.mixername) - 1);
    mixer->ext.poll_fd = -1;
    mixer->ext.callback = &callbacks;
    mixer->ext.private_data = mixer;
    mixer->ext.tlv.p = db_scale;
    int result = snd_ctl_ext_create(&mixer->ext, name, mode);
    if (result < 0) {
        free(mixer->mixer_path);
        free(mixer);
        return result;
    }
    *handlep = mixer->ext.handle;
    return 0;
}

SND_CTL_PLUGIN_SYMBOL(simcard);
