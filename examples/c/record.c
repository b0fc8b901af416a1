/* A JACK application under an audio session, in C: records its in_1, fed by recd from the
 * session's input route, to a raw file of 32-bit floats; zeros until record permission is
 * granted (docs/audiosession.md).
 *   cc record.c -o record $(pkg-config --cflags --libs audiosession) -ljack
 *   ./record FILE [SECONDS] [APP] [CLIENT]
 * Prints one line per step and per notification. */
#include <audiosession.h>
#include <jack/jack.h>
#include <jack/ringbuffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static jack_port_t *port;
static jack_ringbuffer_t *ring;

static int process(jack_nframes_t frames, void *arg) {
    jack_ringbuffer_write(ring, jack_port_get_buffer(port, frames), frames * sizeof(float));
    return 0;
}

static void on_permission(int granted, void *user) {
    printf("permission %s\n", granted ? "granted" : "denied");
    fflush(stdout);
}

static void on_interruption(uint32_t type, uint32_t options, uint32_t reason, void *user) {
    printf("interruption %s reason=%s options=%s\n", as_interruption_type_name(type), as_interruption_reason_name(reason),
           as_interruption_options_name(options));
    fflush(stdout);
}

static void check(as_session *session, as_status status, const char *what) {
    if (status == AS_OK) printf("%s\n", what);
    else printf("error: %s: %s (%d): %s\n", what, as_error_name(status), status, as_last_error_message(session));
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: record FILE [SECONDS] [APP] [CLIENT]\n");
        return 2;
    }
    FILE *file = fopen(argv[1], "wb");
    double seconds = argc > 2 ? atof(argv[2]) : 3;
    const char *app = argc > 3 ? argv[3] : "crecord";
    const char *name = argc > 4 ? argv[4] : "crecord-app";
    if (!file) {
        printf("error: cannot create %s\n", argv[1]);
        return 2;
    }
    jack_client_t *client = jack_client_open(name, JackNoStartServer, NULL);
    if (!client) {
        printf("error: cannot open the JACK client %s (is the JACK server running?)\n", name);
        return 1;
    }
    port = jack_port_register(client, "in_1", JACK_DEFAULT_AUDIO_TYPE, JackPortIsInput, 0);
    ring = jack_ringbuffer_create(jack_get_sample_rate(client) * sizeof(float) * 4);
    jack_set_process_callback(client, process, NULL);
    if (jack_activate(client)) {
        printf("error: the JACK server refused to activate %s\n", name);
        return 1;
    }
    const char *capture_ports[] = {jack_port_name(port)};
    printf("client %s\n", capture_ports[0]);
    fflush(stdout);

    as_session *session = as_session_new(app, NULL, "the C record example records its input");
    as_set_interruption_callback(session, on_interruption, NULL);
    check(session, as_set_category(session, "record", NULL, 0, NULL), "category record");
    check(session, as_attach(session, name, NULL, 0, capture_ports, 1), "attached");
    check(session, as_set_active(session, 1, 0), "active");
    as_request_record_permission(session, on_permission, NULL); /* zeros until granted */

    char chunk[65536];
    size_t written = 0;
    jack_time_t start = jack_get_time();
    while ((jack_get_time() - start) / 1e6 < seconds) {
        size_t count = jack_ringbuffer_read(ring, chunk, sizeof chunk);
        if (count) written += fwrite(chunk, 1, count, file);
        else usleep(10000);
    }
    jack_deactivate(client);
    written += fwrite(chunk, 1, jack_ringbuffer_read(ring, chunk, sizeof chunk), file);
    fclose(file);
    printf("wrote %zu frames to %s\n", written / sizeof(float), argv[1]);
    as_session_free(session);
    jack_client_close(client);
    return 0;
}
