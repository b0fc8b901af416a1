// bench/flac-floor: libFLAC's own cost at recd's settings, without recd (issue 17's floor).
//
// Encodes the same 20 s of 32-channel, 24-bit, 48 kHz noise (a leaky-integrated LCG, one state
// per channel: brown-ish, like program material compresses) into four 8-channel streams at
// compression level 5 with MD5, the way recd's 32-channel recorder writes four files, and prints
// the CPU time (CLOCK_PROCESS_CPUTIME_ID) per second of audio. The streams go to a callback that
// only counts bytes: no file system. Run with the chunk size as argument: 0 encodes each stream
// whole, one after another (as four `flac` runs would); N > 0 feeds every stream N frames in turn
// (as recd's archiver does), to see whether four encoders taking turns cost more than one at a
// time (their state evicting each other's from the cache).
#include <FLAC/stream_encoder.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { SECONDS = 20, RATE = 48000, FILES = 4, CHANNELS = 8, BLOCK = 4096 };

static FLAC__StreamEncoderWriteStatus count_bytes(
    const FLAC__StreamEncoder *encoder, const FLAC__byte buffer[], size_t bytes, uint32_t samples,
    uint32_t frame, void *data) {
    (void)encoder; (void)buffer; (void)samples; (void)frame;
    *(size_t *)data += bytes;
    return FLAC__STREAM_ENCODER_WRITE_STATUS_OK;
}

static double cpu_seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return now.tv_sec + now.tv_nsec * 1e-9;
}

// Frames [from, from + count) of stream `file` (its 8 channels of the 32), interleaved.
static void take(const int32_t *all, long from, long count, int file, int32_t *out) {
    for (long frame = 0; frame < count; frame++)
        memcpy(out + frame * CHANNELS, all + (from + frame) * CHANNELS * FILES + file * CHANNELS,
               CHANNELS * sizeof(int32_t));
}

int main(int argc, char **argv) {
    long chunk = argc > 1 ? atol(argv[1]) : BLOCK;
    long frames = (long)SECONDS * RATE;
    int32_t *all = malloc(sizeof(int32_t) * frames * CHANNELS * FILES);
    int32_t *buffer = malloc(sizeof(int32_t) * (chunk > BLOCK ? chunk : BLOCK) * CHANNELS);
    if (!all || !buffer) return 1;
    unsigned seed = 1;
    double level[CHANNELS * FILES] = {0};
    for (long frame = 0; frame < frames; frame++)
        for (int channel = 0; channel < CHANNELS * FILES; channel++) {
            seed = seed * 1103515245u + 12345u;
            double white = ((seed >> 8) & 0xffff) / 32768.0 - 1;
            level[channel] = 0.98 * level[channel] + 0.2 * white;
            long value = (long)(level[channel] * 2000000);
            all[frame * CHANNELS * FILES + channel] =
                (int32_t)(value > 8388607 ? 8388607 : value < -8388608 ? -8388608 : value);
        }
    FLAC__StreamEncoder *encoders[FILES];
    size_t bytes[FILES] = {0};
    for (int file = 0; file < FILES; file++) {
        FLAC__StreamEncoder *encoder = encoders[file] = FLAC__stream_encoder_new();
        FLAC__stream_encoder_set_channels(encoder, CHANNELS);
        FLAC__stream_encoder_set_bits_per_sample(encoder, 24);
        FLAC__stream_encoder_set_sample_rate(encoder, RATE);
        FLAC__stream_encoder_set_compression_level(encoder, 5);
        if (FLAC__stream_encoder_init_stream(encoder, count_bytes, NULL, NULL, NULL, &bytes[file]) !=
            FLAC__STREAM_ENCODER_INIT_STATUS_OK)
            return 1;
    }
    double began = cpu_seconds();
    if (chunk == 0) {
        for (int file = 0; file < FILES; file++)
            for (long from = 0; from < frames; from += BLOCK) {
                long count = frames - from < BLOCK ? frames - from : BLOCK;
                take(all, from, count, file, buffer);
                FLAC__stream_encoder_process_interleaved(encoders[file], buffer, (uint32_t)count);
            }
    } else {
        for (long from = 0; from < frames; from += chunk) {
            long count = frames - from < chunk ? frames - from : chunk;
            for (int file = 0; file < FILES; file++) {
                take(all, from, count, file, buffer);
                FLAC__stream_encoder_process_interleaved(encoders[file], buffer, (uint32_t)count);
            }
        }
    }
    size_t total = 0;
    for (int file = 0; file < FILES; file++) {
        FLAC__stream_encoder_finish(encoders[file]);
        FLAC__stream_encoder_delete(encoders[file]);
        total += bytes[file];
    }
    double cpu = cpu_seconds() - began;
    printf("%s: %.1f ms of CPU per second of 32 channels (%.2f s per channel-hour), %zu bytes\n",
           chunk == 0 ? "one stream at a time" : "streams taking turns", cpu * 1000 / SECONDS,
           cpu * 3600 / (CHANNELS * FILES * SECONDS), total);
    free(all);
    free(buffer);
    return 0;
}
