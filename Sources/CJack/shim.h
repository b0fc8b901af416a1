#ifndef RECD_CJACK_SHIM_H
#define RECD_CJACK_SHIM_H
// JACK for Swift. jack_client_open is C-variadic and does not import, so it is
// wrapped here; everything else is used as libjack declares it.
#include <jack/jack.h>
#include <jack/ringbuffer.h>

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
#endif
