/* libFuzzer target for libaudiosession (libaudiosession/, C), two doors in one:
 *
 * - bytes → a sequence of the library's calls with the arguments a careless or hostile C
 *   caller passes: NULL, live and freed session handles, NULL and random strings (bad UTF-8,
 *   no vocabulary word), NULL and random result pointers, port lists with NULL entries and
 *   counts past the 256 the API allows, every as_*_name with any value. No recd listens: calls
 *   with good arguments fail with mediaServicesFailed, which is the point: the argument checks
 *   run before anything is sent.
 * - an input that starts with '{' is what recd sends: the bytes arrive on a connection (a
 *   socketpair) as a request's reply lines and then as the watch connection's event lines:
 *   line framing, JSON, reply matching, error objects, route descriptions and every event the
 *   library turns into a callback (the callbacks read what they are given).
 *
 * Every call must return and never crash, hang or leak (ASan's leak check runs at exit). */
#include "internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The two sessions the whole run shares (a new session waits up to a second for recd). */
static as_session *live, *freed;
static int32_t result_slot;
static volatile size_t observed;

static void on_flag(int flag, void *user) { observed += (size_t)flag + (user != NULL); }
static void on_interruption(uint32_t type, uint32_t options, uint32_t reason, void *user) {
    observed += strlen(as_interruption_type_name(type)) + strlen(as_interruption_options_name(options))
                + strlen(as_interruption_reason_name(reason)) + (user != NULL);
}
static void on_route_change(uint32_t reason, const char *previous, void *user) {
    observed += strlen(as_route_change_reason_name(reason)) + strlen(previous) + (user != NULL);
}
static void on_hint(uint32_t type, void *user) { observed += strlen(as_silence_secondary_audio_hint_name(type)) + (user != NULL); }

struct bytes {
    const uint8_t *data;
    size_t size, at;
};

static int next(struct bytes *bytes) { return bytes->at < bytes->size ? bytes->data[bytes->at++] : -1; }
static uint8_t next_or(struct bytes *bytes, uint8_t fallback) {
    int value = next(bytes);
    return value < 0 ? fallback : (uint8_t)value;
}

/* A C string made of the next bytes (length byte first; 255: NULL), bad UTF-8 and all; free it. */
static char *take_string(struct bytes *bytes) {
    int length = next_or(bytes, 0);
    if (length == 255) return NULL;
    char *text = malloc((size_t)length + 1);
    for (int i = 0; i < length; i++) {
        uint8_t c = next_or(bytes, 'a');
        text[i] = c ? (char)c : 'a';
    }
    text[length] = 0;
    return text;
}

static const char *const port_name = "app:out_1";

/* A port list and the count to pass: entries (NULL at random) as many as the count, or a NULL
 * list with any count up to 427. Never a list shorter than its count: that would be the caller
 * reading past its own array, which no library can check. */
static const char **take_ports(struct bytes *bytes, size_t *count) {
    uint8_t shape = next_or(bytes, 0);
    *count = next_or(bytes, 0) + (shape & 1 ? 172u : 0u);
    if ((shape & 2) || *count == 0) return NULL;
    const char **entries = malloc(*count * sizeof *entries);
    for (size_t i = 0; i < *count; i++) entries[i] = next_or(bytes, 1) % 5 == 0 ? NULL : port_name;
    return entries;
}

static void calls(struct bytes *bytes) {
    /* At most 64 calls an input: a long input is many calls, not a slow one. */
    for (int call = 0; call < 64; call++) {
        int op = next(bytes), which = next(bytes);
        if (op < 0 || which < 0) return;
        as_session *session = (as_session *[]){live, NULL, freed}[which % 3];
        int32_t *out = which & 4 ? NULL : &result_slot;
        switch (op % 24) {
        case 0: {
            char *category = take_string(bytes), *mode = take_string(bytes);
            (void)as_set_category(session, category, mode, (uint64_t)next_or(bytes, 0) << 13, NULL);
            free(category);
            free(mode);
            break;
        }
        case 1: (void)as_set_active(session, which & 1, next_or(bytes, 0)); break;
        case 2: {
            char *port = take_string(bytes);
            (void)as_set_preferred_input(session, port);
            free(port);
            break;
        }
        case 3: (void)as_override_output_audio_port(session, which & 1); break;
        case 4: (void)as_record_permission(session, out); break;
        case 5: (void)as_request_record_permission_wait(session, out); break;
        case 6: (void)as_request_record_permission(session, which & 8 ? NULL : on_flag, NULL); break;
        case 7: (void)as_is_other_audio_playing(session, (int *)out); break;
        case 8: (void)as_secondary_audio_should_be_silenced_hint(session, (int *)out); break;
        case 9: as_free(as_copy_current_route_json(session)); break;
        case 10: as_free(as_copy_available_inputs_json(session)); break;
        case 11: {
            char *client = take_string(bytes);
            size_t play_count, capture_count;
            const char **play = take_ports(bytes, &play_count), **capture = take_ports(bytes, &capture_count);
            (void)as_attach(session, client, play, play_count, capture, capture_count);
            free(client);
            free(play);
            free(capture);
            break;
        }
        case 12: {
            char *client = take_string(bytes);
            (void)as_detach(session, client);
            free(client);
            break;
        }
        case 13: (void)as_set_interruption_callback(session, which & 8 ? NULL : on_interruption, NULL); break;
        case 14: (void)as_set_media_services_callback(session, which & 8 ? NULL : on_flag, NULL); break;
        case 15: (void)as_set_input_mute_callback(session, which & 8 ? NULL : on_flag, NULL); break;
        case 16: observed += strlen(as_last_error_message(session)); break;
        case 17: (void)as_set_prefers_no_interruptions_from_system_alerts(session, (int8_t)next_or(bytes, 0)); break;
        case 18: (void)as_prefers_no_interruptions_from_system_alerts(session, out); break;
        case 19: (void)as_set_prefers_echo_cancelled_input(session, (int8_t)next_or(bytes, 0)); break;
        case 20: (void)as_is_echo_cancelled_input_available(session, out); break;
        case 21: (void)as_set_route_change_callback(session, which & 8 ? NULL : on_route_change, NULL); break;
        case 22: (void)as_set_silence_secondary_audio_hint_callback(session, which & 8 ? NULL : on_hint, NULL); break;
        default: {
            uint32_t value = (uint32_t)next_or(bytes, 0) << 24 | (uint32_t)which;
            observed += strlen(as_error_name((as_status)value)) + strlen(as_category_option_name(value))
                        + strlen(as_set_active_option_name(value)) + strlen(as_record_permission_name((int32_t)value))
                        + strlen(as_interruption_type_name(value)) + strlen(as_interruption_options_name(value))
                        + strlen(as_interruption_reason_name(value)) + strlen(as_route_change_reason_name(value))
                        + strlen(as_silence_secondary_audio_hint_name(value));
        }
        }
    }
}

/* What recd sent, read as the library reads it: first as the reply to a request, then line by
 * line as events of the watch connection. */
static void from_recd(const uint8_t *data, size_t size) {
    int ends[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) < 0) return;
    /* The fuzzer's inputs are far smaller than the socket's buffer: written whole, then the end. */
    size_t written = 0;
    while (written < size) {
        ssize_t count = write(ends[1], data + written, size - written);
        if (count <= 0) break;
        written += (size_t)count;
    }
    shutdown(ends[1], SHUT_WR);
    asi_connection connection;
    asi_connection_init(&connection);
    connection.fd = ends[0];
    json_t *reply = NULL;
    char *reason = NULL;
    if (asi_connection_call(&connection, "session.show", asi_app_arguments(live), 1000, &reply, &reason) == ASI_OK) {
        observed += (size_t)asi_error_code(json_object_get(reply, "error"));
        const json_t *session = json_object_get(reply, "session");
        free(asi_route_json(json_object_get(session, "routeDescription")));
        free(asi_ports_json(json_object_get(session, "availableInputs")));
        bool flag;
        (void)asi_bool(session, "isOtherAudioPlaying", &flag);
    }
    json_decref(reply);
    free(reason);
    for (int line = 0; line < 256; line++) {
        json_t *message;
        asi_io io = asi_connection_read(&connection, 1000, &message, &reason);
        free(reason);
        if (io != ASI_OK) break;
        asi_event(live, message);
        json_decref(message);
    }
    asi_connection_close(&connection); /* closes ends[0] */
    close(ends[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!live) {
        live = as_session_new("fuzz", "/nonexistent/recd-fuzz.sock", "the fuzzer");
        freed = as_session_new("gone", "/nonexistent/recd-fuzz.sock", NULL);
        as_session_free(freed);
        as_set_interruption_callback(live, on_interruption, NULL);
        as_set_route_change_callback(live, on_route_change, NULL);
        as_set_media_services_callback(live, on_flag, NULL);
        as_set_silence_secondary_audio_hint_callback(live, on_hint, NULL);
        as_set_input_mute_callback(live, on_flag, NULL);
    }
    if (size > 0 && data[0] == '{') {
        from_recd(data, size);
    } else {
        struct bytes bytes = {data, size, 0};
        calls(&bytes);
    }
    return 0;
}
