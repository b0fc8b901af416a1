/* A JACK application under an audio session, in C: a 440 Hz tone on out_1 that reaches the
 * speakers only through recd (docs/audiosession.md).
 *   cc tone.c -o tone $(pkg-config --cflags --libs audiosession) -ljack -lm
 *   ./tone [APP] [CLIENT] [OPTIONS]     OPTIONS: AS_OPTION_* bits, e.g. 1 = mixWithOthers
 * Prints one line per step and per notification; plays until SIGTERM or SIGINT. */
#include <audiosession.h>
#include <jack/jack.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static jack_port_t *port;
static float phase, step;

static int process(jack_nframes_t frames, void *arg) {
    float *out = jack_port_get_buffer(port, frames);
    for (jack_nframes_t i = 0; i < frames; i++) {
        out[i] = 0.5f * sinf(phase);
        phase += step;
        if (phase > 2 * (float)M_PI) phase -= 2 * (float)M_PI;
    }
    return 0;
}

static void on_interruption(uint32_t type, uint32_t options, uint32_t reason, void *user) {
    printf("interruption %s reason=%s options=%s\n", as_interruption_type_name(type), as_interruption_reason_name(reason),
           as_interruption_options_name(options));
    fflush(stdout);
}

static void on_route_change(uint32_t reason, const char *previous_route_json, void *user) {
    printf("routeChange reason=%s previous=%s\n", as_route_change_reason_name(reason), previous_route_json);
    fflush(stdout);
}

static void on_media_services(int reset, void *user) {
    printf("%s\n", reset ? "mediaServicesWereReset" : "mediaServicesWereLost");
    fflush(stdout);
}

static void check(as_session *session, as_status status, const char *what) {
    if (status == AS_OK) printf("%s\n", what);
    else printf("error: %s: %s (%d): %s\n", what, as_error_name(status), status, as_last_error_message(session));
    fflush(stdout);
}

int main(int argc, char **argv) {
    const char *app = argc > 1 ? argv[1] : "ctone";
    const char *name = argc > 2 ? argv[2] : "ctone-app";
    uint64_t options = argc > 3 ? strtoull(argv[3], NULL, 0) : 0;

    jack_client_t *client = jack_client_open(name, JackNoStartServer, NULL);
    if (!client) {
        printf("error: cannot open the JACK client %s (is the JACK server running?)\n", name);
        return 1;
    }
    port = jack_port_register(client, "out_1", JACK_DEFAULT_AUDIO_TYPE, JackPortIsOutput, 0);
    step = 2 * (float)M_PI * 440 / jack_get_sample_rate(client);
    jack_set_process_callback(client, process, NULL);
    if (jack_activate(client)) {
        printf("error: the JACK server refused to activate %s\n", name);
        return 1;
    }
    const char *play_ports[] = {jack_port_name(port)};
    printf("client %s\n", play_ports[0]);
    fflush(stdout);

    as_session *session = as_session_new(app, NULL, NULL);
    as_set_interruption_callback(session, on_interruption, NULL);
    as_set_route_change_callback(session, on_route_change, NULL);
    as_set_media_services_callback(session, on_media_services, NULL);
    check(session, as_set_category(session, "playback", "default", options, NULL), "category playback");
    check(session, as_attach(session, name, play_ports, 1, NULL, 0), "attached");
    check(session, as_set_active(session, 1, 0), "active");
    for (;;) pause();
}
