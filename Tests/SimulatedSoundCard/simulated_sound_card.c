// A simulated sound card for tests: an alsa-lib external (ioplug) PCM whose crystal runs `ppm`
// parts per million fast or slow against CLOCK_MONOTONIC. It plays what it is given in real time,
// reports its hardware pointer in steps of `granularity_us` (a USB card's pointer moves a packet
// at a time, an HDA card's a DMA burst), underruns as a card does when it runs dry, and records
// every frame it plays with the moment it left:
//
//   RECORD.pcm     the frames played, in order, in the stream's own format
//   RECORD.timing  one line per run of the card:
//                    run START_NS FIRST_FRAME RATE FRAME_BYTES
//                                                       frame FIRST_FRAME + i of RECORD.pcm (frames
//                                                       of FRAME_BYTES) left the card at
//                                                       START_NS + i / RATE seconds
//                  and one line per underrun:  xrun NS FRAMES_PLAYED_IN_THE_RUN
//
// Loaded from a test's own asoundrc:
//   pcm_type.simcard { lib "/path/to/libasound_module_pcm_simcard.so" }
//   pcm.room { type simcard ppm 200 record "/tmp/x/room" granularity_us 1000 unplug "/tmp/x/gone" }
// While the `unplug` file exists the card is gone: opening fails and a running stream errors
// with -ENODEV, as a USB DAC pulled out does.
#include "simulated_sound_card.h"
#include <alsa/pcm_external.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    snd_pcm_ioplug_t io;
    double ppm;
    long granularity_us;
    char *record_path;
    char *unplug_path;
    FILE *pcm_file;
    FILE *timing_file;
    int timer_fd;
    size_t frame_bytes;
    unsigned char *ring;        // buffer_size frames, indexed by absolute frame % buffer_size
    uint64_t written;           // frames the application gave this run
    uint64_t recorded;          // frames of this run already in RECORD.pcm
    uint64_t pcm_frames;        // frames in RECORD.pcm over all runs and opens
    uint64_t pcm_bytes_at_open; // bytes RECORD.pcm held when this open began
    int64_t start_ns;           // when this run's first frame left; 0 while stopped
    int running;
    int xrun;
} simcard_t;

static int64_t monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static double crystal_rate(const simcard_t *card) {
    return card->io.rate * (1.0 + card->ppm / 1e6);
}

static int unplugged(const simcard_t *card) {
    return card->unplug_path != NULL && access(card->unplug_path, F_OK) == 0;
}

// Frames that really left the card by `now` (the DAC runs continuously; only its pointer is coarse).
static uint64_t frames_left(const simcard_t *card, int64_t now) {
    if (!card->running || now <= card->start_ns) return 0;
    return (uint64_t)((double)(now - card->start_ns) / 1e9 * crystal_rate(card));
}

// Writes the frames played up to `played` (within what the application gave) to RECORD.pcm.
static void record_up_to(simcard_t *card, uint64_t played) {
    if (played > card->written) played = card->written;
    size_t buffer = card->io.buffer_size;
    while (card->recorded < played) {
        size_t offset = card->recorded % buffer;
        size_t count = buffer - offset;
        if (count > played - card->recorded) count = played - card->recorded;
        if (card->pcm_file) fwrite(card->ring + offset * card->frame_bytes, card->frame_bytes, count, card->pcm_file);
        card->recorded += count;
        card->pcm_frames += count;
    }
    // Buffered by stdio and flushed when the card stops or closes: a flush at every pointer
    // read would cost the player's process a write(2) each time, counted as the player's CPU.
}

// Brings the record up to now; an underrun when the card played past what it was given.
static void advance(simcard_t *card) {
    if (!card->running) return;
    int64_t now = monotonic_ns();
    uint64_t left = frames_left(card, now);
    record_up_to(card, left);
    // Played dry while draining is the end of the stream; otherwise the card underran.
    if (left > card->written && !card->xrun && card->io.state != SND_PCM_STATE_DRAINING) {
        card->xrun = 1;
        if (card->timing_file) {
            fprintf(card->timing_file, "xrun %" PRId64 " %" PRIu64 "\n", now, card->written);
            fflush(card->timing_file);
        }
    }
}

static int simcard_start(snd_pcm_ioplug_t *io) {
    simcard_t *card = io->private_data;
    if (unplugged(card)) return -ENODEV;
    card->start_ns = monotonic_ns();
    card->running = 1;
    card->xrun = 0;
    if (card->timing_file) {
        fprintf(card->timing_file, "run %" PRId64 " %" PRIu64 " %.6f %zu\n", card->start_ns, card->pcm_frames, crystal_rate(card),
                card->frame_bytes);
        fflush(card->timing_file);
    }
    struct itimerspec tick = {0};
    long period_ns = (long)((double)io->period_size / io->rate * 1e9);
    if (period_ns < 1000000) period_ns = 1000000;
    tick.it_interval.tv_sec = period_ns / 1000000000;
    tick.it_interval.tv_nsec = period_ns % 1000000000;
    tick.it_value = tick.it_interval;
    timerfd_settime(card->timer_fd, 0, &tick, NULL);
    return 0;
}

static int simcard_stop(snd_pcm_ioplug_t *io) {
    simcard_t *card = io->private_data;
    advance(card);
    if (card->pcm_file) fflush(card->pcm_file);
    card->running = 0;
    struct itimerspec off = {0};
    timerfd_settime(card->timer_fd, 0, &off, NULL);
    return 0;
}

// The hardware pointer: what left the card, rounded down to the card's granularity.
static snd_pcm_sframes_t simcard_pointer(snd_pcm_ioplug_t *io) {
    simcard_t *card = io->private_data;
    if (unplugged(card)) {
        // As a USB card pulled out: every call on it fails with ENODEV from now on.
        snd_pcm_ioplug_set_state(io, SND_PCM_STATE_DISCONNECTED);
        return -ENODEV;
    }
    if (!card->running) return (snd_pcm_sframes_t)(card->recorded % io->buffer_size);
    advance(card);
    if (card->xrun) return -EPIPE;
    uint64_t step = (uint64_t)((double)card->granularity_us / 1e6 * io->rate);
    if (step < 1) step = 1;
    uint64_t left = frames_left(card, monotonic_ns());
    uint64_t coarse = left / step * step;
    return (snd_pcm_sframes_t)(coarse % io->buffer_size);
}

static snd_pcm_sframes_t simcard_transfer(snd_pcm_ioplug_t *io, const snd_pcm_channel_area_t *areas,
                                          snd_pcm_uframes_t offset, snd_pcm_uframes_t size) {
    simcard_t *card = io->private_data;
    if (unplugged(card)) return -ENODEV;
    const unsigned char *source = (const unsigned char *)areas[0].addr + areas[0].first / 8 + offset * card->frame_bytes;
    size_t buffer = io->buffer_size;
    snd_pcm_uframes_t done = 0;
    while (done < size) {
        size_t at = (card->written + done) % buffer;
        size_t count = buffer - at;
        if (count > size - done) count = size - done;
        memcpy(card->ring + at * card->frame_bytes, source + done * card->frame_bytes, count * card->frame_bytes);
        done += count;
    }
    card->written += size;
    return (snd_pcm_sframes_t)size;
}

static int simcard_prepare(snd_pcm_ioplug_t *io) {
    simcard_t *card = io->private_data;
    if (unplugged(card)) return -ENODEV;
    advance(card);
    card->running = 0;
    card->written = 0;
    card->recorded = 0;
    card->xrun = 0;
    return 0;
}

static int simcard_hw_params(snd_pcm_ioplug_t *io, snd_pcm_hw_params_t *params) {
    (void)params;
    simcard_t *card = io->private_data;
    card->frame_bytes = (size_t)snd_pcm_format_physical_width(io->format) / 8 * io->channels;
    if (card->pcm_frames == 0 && card->frame_bytes > 0) card->pcm_frames = card->pcm_bytes_at_open / card->frame_bytes;
    free(card->ring);
    card->ring = calloc(io->buffer_size, card->frame_bytes);
    return card->ring ? 0 : -ENOMEM;
}

static int simcard_poll_revents(snd_pcm_ioplug_t *io, struct pollfd *pfd, unsigned int nfds, unsigned short *revents) {
    simcard_t *card = io->private_data;
    (void)nfds;
    uint64_t expirations;
    if (pfd[0].revents & POLLIN) (void)!read(card->timer_fd, &expirations, sizeof expirations);
    if (unplugged(card)) { *revents = POLLERR; return 0; }
    advance(card);
    if (card->xrun) { *revents = POLLOUT | POLLERR; return 0; }
    uint64_t queued = card->written - (frames_left(card, monotonic_ns()) < card->written ? frames_left(card, monotonic_ns()) : card->written);
    uint64_t room = io->buffer_size > queued ? io->buffer_size - queued : 0;
    *revents = (!card->running || room >= io->period_size) ? POLLOUT : 0;
    return 0;
}

static int simcard_close(snd_pcm_ioplug_t *io) {
    simcard_t *card = io->private_data;
    advance(card);
    if (card->pcm_file) fclose(card->pcm_file);
    if (card->timing_file) fclose(card->timing_file);
    close(card->timer_fd);
    free(card->ring);
    free(card->record_path);
    free(card->unplug_path);
    free(card);
    return 0;
}

static const snd_pcm_ioplug_callback_t simcard_callbacks = {
    .start = simcard_start,
    .stop = simcard_stop,
    .pointer = simcard_pointer,
    .transfer = simcard_transfer,
    .prepare = simcard_prepare,
    .hw_params = simcard_hw_params,
    .poll_revents = simcard_poll_revents,
    .close = simcard_close,
};

static FILE *open_record(const char *base, const char *suffix) {
    char path[4096];
    snprintf(path, sizeof path, "%s%s", base, suffix);
    return fopen(path, "a");
}

static int set_constraints(snd_pcm_ioplug_t *io) {
    static const unsigned int accesses[] = { SND_PCM_ACCESS_RW_INTERLEAVED };
    static const unsigned int formats[] = { SND_PCM_FORMAT_S16_LE, SND_PCM_FORMAT_S24_3LE, SND_PCM_FORMAT_S32_LE };
    int error;
    if ((error = snd_pcm_ioplug_set_param_list(io, SND_PCM_IOPLUG_HW_ACCESS, 1, accesses)) < 0) return error;
    if ((error = snd_pcm_ioplug_set_param_list(io, SND_PCM_IOPLUG_HW_FORMAT, 3, formats)) < 0) return error;
    if ((error = snd_pcm_ioplug_set_param_minmax(io, SND_PCM_IOPLUG_HW_CHANNELS, 1, 8)) < 0) return error;
    if ((error = snd_pcm_ioplug_set_param_minmax(io, SND_PCM_IOPLUG_HW_RATE, 8000, 192000)) < 0) return error;
    if ((error = snd_pcm_ioplug_set_param_minmax(io, SND_PCM_IOPLUG_HW_PERIOD_BYTES, 256, 128 << 10)) < 0) return error;
    // As a USB card allows: at most 32 periods and 512 KiB of buffer (about 3 s of CD audio).
    if ((error = snd_pcm_ioplug_set_param_minmax(io, SND_PCM_IOPLUG_HW_PERIODS, 2, 32)) < 0) return error;
    return snd_pcm_ioplug_set_param_minmax(io, SND_PCM_IOPLUG_HW_BUFFER_BYTES, 1024, 512 << 10);
}

SND_PCM_PLUGIN_DEFINE_FUNC(simcard) {
    (void)root;
    double ppm = 0;
    long granularity_us = 1000;
    const char *record = NULL, *unplug = NULL;
    snd_config_iterator_t i, next;
    snd_config_for_each(i, next, conf) {
        snd_config_t *node = snd_config_iterator_entry(i);
        const char *id;
        if (snd_config_get_id(node, &id) < 0) continue;
        if (strcmp(id, "comment") == 0 || strcmp(id, "type") == 0 || strcmp(id, "hint") == 0) continue;
        if (strcmp(id, "ppm") == 0) {
            if (snd_config_get_ireal(node, &ppm) < 0) { SNDERR("ppm must be a number"); return -EINVAL; }
        } else if (strcmp(id, "granularity_us") == 0) {
            if (snd_config_get_integer(node, &granularity_us) < 0) { SNDERR("granularity_us must be an integer"); return -EINVAL; }
        } else if (strcmp(id, "record") == 0) {
            if (snd_config_get_string(node, &record) < 0) { SNDERR("record must be a path"); return -EINVAL; }
        } else if (strcmp(id, "unplug") == 0) {
            if (snd_config_get_string(node, &unplug) < 0) { SNDERR("unplug must be a path"); return -EINVAL; }
        } else {
            SNDERR("unknown field %s", id);
            return -EINVAL;
        }
    }
    if (unplug != NULL && access(unplug, F_OK) == 0) return -ENOENT;
    if (stream != SND_PCM_STREAM_PLAYBACK) return -EINVAL;

    simcard_t *card = calloc(1, sizeof *card);
    if (card == NULL) return -ENOMEM;
    card->ppm = ppm;
    card->granularity_us = granularity_us > 0 ? granularity_us : 1;
    card->record_path = record ? strdup(record) : NULL;
    card->unplug_path = unplug ? strdup(unplug) : NULL;
    if (record) {
        card->pcm_file = open_record(record, ".pcm");
        card->timing_file = open_record(record, ".timing");
    }
    // The record is appended to: a card opened again (a player that reopens it, a reopen after
    // an unplug) numbers its frames after those already there.
    if (card->pcm_file) {
        fseek(card->pcm_file, 0, SEEK_END);
        card->pcm_bytes_at_open = (uint64_t)ftell(card->pcm_file);   // in frames once their size is known
    }
    card->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    card->io.version = SND_PCM_IOPLUG_VERSION;
    card->io.name = "simulated sound card";
    card->io.flags = SND_PCM_IOPLUG_FLAG_MONOTONIC;
    card->io.callback = &simcard_callbacks;
    card->io.private_data = card;
    card->io.poll_fd = card->timer_fd;
    card->io.poll_events = POLLIN;
    card->io.mmap_rw = 0;

    int error = snd_pcm_ioplug_create(&card->io, name, stream, mode);
    if (error < 0) {
        if (card->pcm_file) fclose(card->pcm_file);
        if (card->timing_file) fclose(card->timing_file);
        close(card->timer_fd);
        free(card->record_path);
        free(card->unplug_path);
        free(card);
        return error;
    }
    if ((error = set_constraints(&card->io)) < 0) {
        snd_pcm_ioplug_delete(&card->io);
        return error;
    }
    *pcmp = card->io.pcm;
    return 0;
}

SND_PCM_PLUGIN_SYMBOL(simcard);
