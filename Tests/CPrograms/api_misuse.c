/* Calls every libaudiosession function with the arguments a careless or hostile caller
 * passes: NULL handles, NULL strings and result pointers, bad port lists, a freed session.
 * Each must return AS_ERROR_BAD_PARAM (or NULL) with a message, never crash.
 *   ./api_misuse SOCKET     (a socket where nothing listens: no call needs recd)
 * Prints "ok ..." or "FAIL ..." per check and "misuse: N failures"; exits 1 on any failure. */
#include <audiosession.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int failures;

static void expect_bad(as_status status, as_session *session, const char *what) {
    const char *message = as_last_error_message(session);
    if (status != AS_ERROR_BAD_PARAM || message == NULL || strlen(message) == 0) {
        printf("FAIL %s: %d (%s)\n", what, status, message ? message : "no message");
        failures++;
    } else {
        printf("ok %s: %s\n", what, message);
    }
}

static void expect_null(const void *pointer, const char *what) {
    if (pointer != NULL) {
        printf("FAIL %s: not NULL\n", what);
        failures++;
    } else {
        printf("ok %s: NULL (%s)\n", what, as_last_error_message(NULL));
    }
}

static void on_flag(int flag, void *user) { (void)flag; (void)user; }

int main(int argc, char **argv) {
    const char *socket = argc > 1 ? argv[1] : "/nonexistent/recd.sock";
    int32_t value = 0;
    const char *ports[] = {"app:out_1", NULL};

    expect_null(as_session_new(NULL, socket, NULL), "as_session_new(NULL app)");
    expect_null(as_session_new("", socket, NULL), "as_session_new(empty app)");
    if (as_last_error_message(NULL) == NULL) { printf("FAIL as_last_error_message(NULL) is NULL\n"); failures++; }

    /* A NULL handle, everywhere one is taken. */
    expect_bad(as_set_category(NULL, "playback", NULL, 0, NULL), NULL, "as_set_category(NULL session)");
    expect_bad(as_set_active(NULL, 1, 0), NULL, "as_set_active(NULL session)");
    expect_bad(as_set_preferred_input(NULL, NULL), NULL, "as_set_preferred_input(NULL session)");
    expect_bad(as_override_output_audio_port(NULL, 1), NULL, "as_override_output_audio_port(NULL session)");
    expect_bad(as_set_prefers_no_interruptions_from_system_alerts(NULL, 1), NULL,
               "as_set_prefers_no_interruptions_from_system_alerts(NULL session)");
    expect_bad(as_prefers_no_interruptions_from_system_alerts(NULL, &value), NULL,
               "as_prefers_no_interruptions_from_system_alerts(NULL session)");
    expect_bad(as_set_prefers_echo_cancelled_input(NULL, 1), NULL, "as_set_prefers_echo_cancelled_input(NULL session)");
    expect_bad(as_prefers_echo_cancelled_input(NULL, &value), NULL, "as_prefers_echo_cancelled_input(NULL session)");
    expect_bad(as_is_echo_cancelled_input_available(NULL, &value), NULL,
               "as_is_echo_cancelled_input_available(NULL session)");
    expect_bad(as_record_permission(NULL, &value), NULL, "as_record_permission(NULL session)");
    expect_bad(as_request_record_permission_wait(NULL, &value), NULL, "as_request_record_permission_wait(NULL session)");
    expect_bad(as_request_record_permission(NULL, on_flag, NULL), NULL, "as_request_record_permission(NULL session)");
    expect_bad(as_is_other_audio_playing(NULL, &value), NULL, "as_is_other_audio_playing(NULL session)");
    expect_bad(as_secondary_audio_should_be_silenced_hint(NULL, &value), NULL, "as_secondary_audio_should_be_silenced_hint(NULL session)");
    expect_null(as_copy_current_route_json(NULL), "as_copy_current_route_json(NULL session)");
    expect_null(as_copy_available_inputs_json(NULL), "as_copy_available_inputs_json(NULL session)");
    expect_bad(as_attach(NULL, "app", ports, 1, NULL, 0), NULL, "as_attach(NULL session)");
    expect_bad(as_detach(NULL, "app"), NULL, "as_detach(NULL session)");
    expect_bad(as_set_interruption_callback(NULL, NULL, NULL), NULL, "as_set_interruption_callback(NULL session)");
    expect_bad(as_set_route_change_callback(NULL, NULL, NULL), NULL, "as_set_route_change_callback(NULL session)");
    expect_bad(as_set_media_services_callback(NULL, NULL, NULL), NULL, "as_set_media_services_callback(NULL session)");
    expect_bad(as_set_silence_secondary_audio_hint_callback(NULL, NULL, NULL), NULL,
               "as_set_silence_secondary_audio_hint_callback(NULL session)");
    expect_bad(as_set_input_mute_callback(NULL, NULL, NULL), NULL, "as_set_input_mute_callback(NULL session)");
    as_session_free(NULL);
    as_free(NULL);

    /* A live session: NULL strings, NULL results, bad port lists. */
    as_session *session = as_session_new("misuse", socket, NULL);
    if (!session) { printf("FAIL as_session_new(misuse) is NULL\n"); return 1; }
    expect_bad(as_set_category(session, NULL, NULL, 0, NULL), session, "as_set_category(NULL category)");
    expect_bad(as_record_permission(session, NULL), session, "as_record_permission(NULL result)");
    expect_bad(as_request_record_permission_wait(session, NULL), session, "as_request_record_permission_wait(NULL result)");
    expect_bad(as_request_record_permission(session, NULL, NULL), session, "as_request_record_permission(NULL callback)");
    expect_bad(as_is_other_audio_playing(session, NULL), session, "as_is_other_audio_playing(NULL result)");
    expect_bad(as_secondary_audio_should_be_silenced_hint(session, NULL), session,
               "as_secondary_audio_should_be_silenced_hint(NULL result)");
    expect_bad(as_attach(session, NULL, ports, 1, NULL, 0), session, "as_attach(NULL client)");
    expect_bad(as_attach(session, "app", NULL, 2, NULL, 0), session, "as_attach(NULL play list, count 2)");
    expect_bad(as_attach(session, "app", NULL, 0, ports, 2), session, "as_attach(capture list with a NULL entry)");
    expect_bad(as_attach(session, "app", ports, (size_t)-1, NULL, 0), session, "as_attach(count SIZE_MAX)");
    expect_bad(as_attach(session, "app", ports, 100000, NULL, 0), session, "as_attach(count 100000)");
    expect_bad(as_detach(session, NULL), session, "as_detach(NULL client)");
    expect_bad(as_set_prefers_no_interruptions_from_system_alerts(session, 2), session,
               "as_set_prefers_no_interruptions_from_system_alerts(prefers 2)");
    expect_bad(as_prefers_no_interruptions_from_system_alerts(session, NULL), session,
               "as_prefers_no_interruptions_from_system_alerts(NULL result)");
    expect_bad(as_set_prefers_echo_cancelled_input(session, 2), session, "as_set_prefers_echo_cancelled_input(prefers 2)");
    expect_bad(as_prefers_echo_cancelled_input(session, NULL), session, "as_prefers_echo_cancelled_input(NULL result)");
    expect_bad(as_is_echo_cancelled_input_available(session, NULL), session,
               "as_is_echo_cancelled_input_available(NULL result)");
    /* Valid calls with no recd: a named error, not a crash. */
    as_status status = as_set_active(session, 1, 0);
    if (status != AS_ERROR_MEDIA_SERVICES_FAILED) { printf("FAIL as_set_active without recd: %d\n", status); failures++; }
    else printf("ok as_set_active without recd: %s\n", as_error_name(status));

    /* A freed session: refused, and a second free does nothing. */
    as_session_free(session);
    expect_bad(as_set_active(session, 1, 0), NULL, "as_set_active(freed session)");
    expect_bad(as_set_category(session, "playback", NULL, 0, NULL), NULL, "as_set_category(freed session)");
    expect_null(as_copy_current_route_json(session), "as_copy_current_route_json(freed session)");
    as_session_free(session);

    printf("misuse: %d failures\n", failures);
    return failures == 0 ? 0 : 1;
}
