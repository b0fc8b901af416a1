// bench/port-churn's two JACK clients (docs/jack-servers.md, "jack_get_ports ... crash").
//   port-churn churn: registers 32 output ports, unregisters them, again and again;
//                     prints the rounds done every 50.
//   port-churn list:  calls jack_get_ports(c, NULL, NULL, 0) in a loop on a thread of its own;
//                     prints the calls made every 5 s.
// Beside each other on PipeWire's JACK (0.3.65) the lister crashes inside jack_get_ports in about
// a second: it sorts the ports it found after releasing its lock while PipeWire's thread zeroes
// removed port objects for reuse.
#include <jack/jack.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile long calls;

static void *lister(void *client) {
    for (;;) {
        const char **ports = jack_get_ports(client, NULL, NULL, 0);
        if (ports) jack_free(ports);
        calls++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "list") && strcmp(mode, "churn")) {
        fprintf(stderr, "usage: port-churn list|churn\n");
        return 2;
    }
    jack_status_t status;
    jack_client_t *client = jack_client_open(mode, JackNoStartServer, &status);
    if (!client) {
        fprintf(stderr, "jack_client_open failed (status 0x%x)\n", status);
        return 1;
    }
    jack_activate(client);
    if (!strcmp(mode, "list")) {
        pthread_t thread;
        pthread_create(&thread, NULL, lister, client);
        for (;;) {
            sleep(5);
            fprintf(stderr, "list: %ld calls\n", calls);
        }
    }
    jack_port_t *ports[32];
    char name[16];
    for (long rounds = 1;; rounds++) {
        for (int i = 0; i < 32; i++) {
            snprintf(name, sizeof name, "p%d", i);
            ports[i] = jack_port_register(client, name, JACK_DEFAULT_AUDIO_TYPE, JackPortIsOutput, 0);
        }
        for (int i = 0; i < 32; i++) jack_port_unregister(client, ports[i]);
        if (rounds % 50 == 0) fprintf(stderr, "churn: %ld rounds\n", rounds);
    }
}
