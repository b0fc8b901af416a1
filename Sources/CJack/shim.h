#ifndef RECD_CJACK_SHIM_H
#define RECD_CJACK_SHIM_H
// JACK for Swift. jack_client_open is C-variadic and does not import, so it is
// wrapped here; everything else is used as libjack declares it.
#include <jack/jack.h>
#include <jack/ringbuffer.h>
#include <jack/session.h>  // jack_client_get_uuid: whose is a name (JackClient, duplicate names)

/// Opens a client on the named server (NULL: libjack's default, honouring
/// JACK_DEFAULT_SERVER). Never starts a server.
static inline jack_client_t *recd_jack_client_open(const char *name,
                                                    const char *server_name,
                                                    jack_status_t *status) {
    if (server_name != NULL) {
        return jack_client_open(name, (jack_options_t)(JackNoStartServer | JackServerName),
                                status, server_name);
    }
    return jack_client_open(name, JackNoStartServer, status);
}

// The JACK calls that jack.h documents as safe on the process thread, re-declared so that
// Swift's `@_noLocks` checker accepts calls to them from the process path. Only calls that
// are real-time safe belong here: the checker trusts this attribute blindly.
#if __has_attribute(swift_attr)
#define RECD_NO_LOCKS __attribute__((swift_attr("@_noLocks")))
#else
#define RECD_NO_LOCKS
#endif
void *jack_port_get_buffer(jack_port_t *port, jack_nframes_t nframes) RECD_NO_LOCKS;
jack_nframes_t jack_last_frame_time(const jack_client_t *client) RECD_NO_LOCKS;
jack_nframes_t jack_frame_time(const jack_client_t *client) RECD_NO_LOCKS;
// JACK's microsecond clock (CLOCK_MONOTONIC on jackd2 and PipeWire): a vDSO clock read.
jack_time_t jack_get_time(void) RECD_NO_LOCKS;
// The cycle's times as the server keeps them (jack.h: "to be used from the process callback"):
// the taps tell skipped cycles from late wake-ups by it (TapState.observeClock).
int jack_get_cycle_times(const jack_client_t *client, jack_nframes_t *current_frames,
                         jack_time_t *current_usecs, jack_time_t *next_usecs,
                         float *period_usecs) RECD_NO_LOCKS;
size_t jack_ringbuffer_read_space(const jack_ringbuffer_t *rb) RECD_NO_LOCKS;
size_t jack_ringbuffer_write_space(const jack_ringbuffer_t *rb) RECD_NO_LOCKS;
size_t jack_ringbuffer_read(jack_ringbuffer_t *rb, char *dest, size_t cnt) RECD_NO_LOCKS;
size_t jack_ringbuffer_write(jack_ringbuffer_t *rb, const char *src, size_t cnt) RECD_NO_LOCKS;
#endif
