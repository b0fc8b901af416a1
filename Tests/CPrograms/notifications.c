/* An application that prints every notification of its session in the form the Swift
 * library's AudioSessionNotification.description has (CLibraryTests runs the same steps with
 * the Swift library and compares the lines). A route change prints its previous route as the
 * JSON the callback got.
 *   ./notifications APP [MIC_USAGE]     (socket: RECD_SOCKET)
 * Sets category playback, activates, prints "active", then prints notifications until killed. */
#include <audiosession.h>
#include <stdio.h>
#include <unistd.h>

static void line(const char *text) {
    printf("%s\n", text);
    fflush(stdout);
}

static void on_interruption(uint32_t type, uint32_t options, uint32_t reason, void *user) {
    (void)user;
    printf("interruption %s reason=%s options=%s\n", as_interruption_type_name(type), as_interruption_reason_name(reason),
           as_interruption_options_name(options));
    fflush(stdout);
}

static void on_route_change(uint32_t reason, const char *previous_route_json, void *user) {
    (void)user;
    printf("routeChange reason=%s previous=%s\n", as_route_change_reason_name(reason), previous_route_json);
    fflush(stdout);
}

static void on_media_services(int reset, void *user) {
    (void)user;
    line(reset ? "mediaServicesWereReset" : "mediaServicesWereLost");
}

static void on_hint(uint32_t type, void *user) {
    (void)user;
    printf("silenceSecondaryAudioHint type=%s\n", as_silence_secondary_audio_hint_name(type));
    fflush(stdout);
}

static void on_mute(int muted, void *user) {
    (void)user;
    line(muted ? "inputMuteStateChange muted=true" : "inputMuteStateChange muted=false");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: notifications APP [MIC_USAGE]\n");
        return 2;
    }
    as_session *session = as_session_new(argv[1], NULL, argc > 2 ? argv[2] : NULL);
    as_set_interruption_callback(session, on_interruption, NULL);
    as_set_route_change_callback(session, on_route_change, NULL);
    as_set_media_services_callback(session, on_media_services, NULL);
    as_set_silence_secondary_audio_hint_callback(session, on_hint, NULL);
    as_set_input_mute_callback(session, on_mute, NULL);
    as_status status = as_set_category(session, "playback", NULL, 0, NULL);
    if (status == AS_OK) status = as_set_active(session, 1, 0);
    if (status != AS_OK) {
        printf("error: %s: %s\n", as_error_name(status), as_last_error_message(session));
        return 1;
    }
    line("active");
    for (;;) pause();
}
