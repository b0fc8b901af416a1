/* The session's thread ("audiosession"): a watch connection for the app's events, turned into
 * the application's callbacks in recd's order; when recd goes away it says so
 * (media services lost), reconnects as soon as the socket accepts again, applies what the
 * application asked for (category, preferences, attachments, activation if the session was
 * active when the connection was lost) and says so (media services reset). The same rules as
 * the Swift library's SessionCore; docs/audiosession.md, "When recd restarts". */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long a read of the watch connection waits before it looks whether the session closed,
 * and how long the thread waits between attempts to reach recd: what as_session_free waits
 * for at most. */
#define WATCH_POLL_MS 200
#define RETRY_MS 100

static void signal_first_attempt(as_session *session) {
    pthread_mutex_lock(&session->lock);
    if (!session->first_attempt_done) {
        session->first_attempt_done = true;
        pthread_cond_broadcast(&session->first_attempt);
    }
    pthread_mutex_unlock(&session->lock);
}

static bool closed(as_session *session) { return atomic_load(&session->closed); }

static bool is_app(const json_t *event, const as_session *session) {
    const char *app = asi_string(event, "app");
    return app && strcmp(app, session->app) == 0;
}

static asi_callbacks callbacks(as_session *session) {
    pthread_mutex_lock(&session->lock);
    asi_callbacks copy = session->callbacks;
    pthread_mutex_unlock(&session->lock);
    return copy;
}

static void remember_active(as_session *session, bool active) {
    pthread_mutex_lock(&session->lock);
    session->configuration.active = active;
    pthread_mutex_unlock(&session->lock);
}

static void deliver_media_services(as_session *session, int reset) {
    asi_callbacks c = callbacks(session);
    if (c.media_services) c.media_services(reset, c.media_services_user);
}

/* Makes the remembered attachments again (recd ended them with the connection or the server). */
static void reattach(as_session *session) {
    pthread_mutex_lock(&session->lock);
    size_t count = session->configuration.attachment_count;
    json_t **requests = calloc(count ? count : 1, sizeof(json_t *));
    for (size_t i = 0; requests && i < count; i++)
        requests[i] = asi_attach_arguments(session, &session->configuration.attachments[i]);
    pthread_mutex_unlock(&session->lock);
    for (size_t i = 0; requests && i < count; i++) {
        asi_failure failure;
        json_decref(asi_call(session, "session.attach", requests[i], &failure));
        free(failure.message);
    }
    free(requests);
}

/* Applies what the application asked for again, in the order it would: configuration,
 * preferences, attachments, activation. What fails is skipped: the application sees the state
 * through the calls it makes next. */
static void reapply(as_session *session) {
    json_t *steps[5] = {NULL};
    const char *ops[5] = {NULL};
    size_t count = 0;
    bool active;
    pthread_mutex_lock(&session->lock);
    const asi_configuration *wanted = &session->configuration;
    if (wanted->has_settings) {
        ops[count] = "session.set";
        steps[count++] =
            asi_settings_arguments(session, wanted->category, wanted->mode, wanted->options, wanted->policy);
    }
    if (wanted->preferred_input) {
        ops[count] = "session.prefer";
        steps[count] = asi_app_arguments(session);
        json_object_set_new(steps[count++], "input", json_string(wanted->preferred_input));
    }
    if (wanted->speaker_override) {
        ops[count] = "session.override";
        steps[count] = asi_app_arguments(session);
        json_object_set_new(steps[count++], "port", json_string("speaker"));
    }
    if (wanted->prefers_no_interruptions >= 0) {
        ops[count] = "session.prefer";
        steps[count] = asi_app_arguments(session);
        json_object_set_new(steps[count++], "prefersNoInterruptionsFromSystemAlerts",
                            json_boolean(wanted->prefers_no_interruptions));
    }
    if (wanted->prefers_echo_cancelled >= 0) {
        ops[count] = "session.prefer";
        steps[count] = asi_app_arguments(session);
        json_object_set_new(steps[count++], "prefersEchoCancelledInput", json_boolean(wanted->prefers_echo_cancelled));
    }
    active = wanted->active;
    pthread_mutex_unlock(&session->lock);
    for (size_t i = 0; i < count; i++) {
        asi_failure failure;
        json_decref(asi_call(session, ops[i], steps[i], &failure));
        free(failure.message);
    }
    reattach(session);
    if (active) {
        json_t *arguments = asi_app_arguments(session);
        json_object_set_new(arguments, "hold", json_true());
        asi_failure failure;
        json_decref(asi_call(session, "session.activate", arguments, &failure));
        free(failure.message);
    }
}

/* A code of an event: its numeric field, else its name's value. */
static uint32_t code(const json_t *event, const char *code_key, const char *name_key,
                     uint32_t (*from_name)(const char *)) {
    long long value;
    if (asi_integer(event, code_key, &value) && value >= 0 && value <= UINT32_MAX) return (uint32_t)value;
    return from_name(asi_string(event, name_key));
}

/* Keeps the remembered activation equal to recd's: an activation or deactivation (recd's
 * session event), an interruption that began (the application activates again itself when it
 * ends), the loss of recd's JACK server. An attachment that ended for good is forgotten. */
static void mirror(as_session *session, const char *name, const json_t *event) {
    if (strcmp(name, "session") == 0 && is_app(event, session)) {
        const char *state = asi_string(event, "state");
        remember_active(session, state && strcmp(state, "active") == 0);
    } else if (strcmp(name, "interruption") == 0 && is_app(event, session)) {
        if (code(event, "typeCode", "type", asi_interruption_type) == AS_INTERRUPTION_TYPE_BEGAN)
            remember_active(session, false);
    } else if (strcmp(name, "mediaServicesWereLost") == 0) {
        remember_active(session, false);
    } else if (strcmp(name, "attachment") == 0 && is_app(event, session)) {
        const char *state = asi_string(event, "state"), *reason = asi_string(event, "reason");
        const char *client = asi_string(event, "client");
        /* Ended with the connection or the server: made again after the reconnection. */
        if (client && state && strcmp(state, "detached") == 0 && reason
            && (strcmp(reason, "detached") == 0 || strcmp(reason, "clientGone") == 0
                || strcmp(reason, "sessionDeleted") == 0))
            asi_forget_attachment(session, client);
    }
}

/* The application's callback for one event, if it has one for it. */
static void deliver(as_session *session, const char *name, const json_t *event) {
    asi_callbacks c = callbacks(session);
    if (strcmp(name, "interruption") == 0) {
        if (!c.interruption) return;
        uint32_t options = 0;
        size_t index;
        const json_t *option;
        json_array_foreach(json_object_get(event, "options"), index, option) {
            if (json_is_string(option) && strcmp(json_string_value(option), "shouldResume") == 0)
                options |= AS_INTERRUPTION_OPTION_SHOULD_RESUME;
        }
        c.interruption(code(event, "typeCode", "type", asi_interruption_type), options,
                       code(event, "reasonCode", "reason", asi_interruption_reason), c.interruption_user);
    } else if (strcmp(name, "routeChange") == 0) {
        if (!c.route_change) return;
        char *previous = asi_route_json(json_object_get(event, "previousRouteDescription"));
        c.route_change(code(event, "reasonCode", "reason", asi_route_change_reason),
                       previous ? previous : "{\"inputs\":[],\"outputs\":[]}", c.route_change_user);
        free(previous);
    } else if (strcmp(name, "silenceSecondaryAudioHint") == 0) {
        const char *type = asi_string(event, "type");
        if (!c.silence_hint || !type) return;
        if (strcmp(type, "begin") == 0) c.silence_hint(AS_SILENCE_SECONDARY_AUDIO_HINT_BEGIN, c.silence_hint_user);
        else if (strcmp(type, "end") == 0) c.silence_hint(AS_SILENCE_SECONDARY_AUDIO_HINT_END, c.silence_hint_user);
    } else if (strcmp(name, "inputMuteStateChange") == 0) {
        bool muted;
        if (c.input_mute && asi_bool(event, "muted", &muted)) c.input_mute(muted, c.input_mute_user);
    } else if (strcmp(name, "mediaServicesWereLost") == 0) {
        if (c.media_services) c.media_services(0, c.media_services_user);
    } else if (strcmp(name, "mediaServicesWereReset") == 0) {
        if (c.media_services) c.media_services(1, c.media_services_user);
    }
}

void asi_event(as_session *session, const json_t *message) {
    const char *name = asi_string(message, "event");
    if (!name || json_object_get(message, "id")) return;
    mirror(session, name, message);
    /* recd's JACK server came back: recd applied the sessions again, but attachments end with
     * the server; make ours again before the application hears of it. */
    if (strcmp(name, "mediaServicesWereReset") == 0) reattach(session);
    deliver(session, name, message);
}

/* Delivers events until the connection fails or the session closes. */
static void read_events(as_session *session, asi_connection *watch) {
    while (!closed(session)) {
        json_t *message;
        char *reason;
        asi_io io = asi_connection_read(watch, WATCH_POLL_MS, &message, &reason);
        free(reason);
        if (io == ASI_TIMED_OUT) continue;
        if (io == ASI_FAILED) return;
        asi_event(session, message);
        json_decref(message);
    }
}

static void sleep_ms(long milliseconds) {
    struct timespec pause = {milliseconds / 1000, (milliseconds % 1000) * 1000000L};
    while (nanosleep(&pause, &pause) < 0 && errno == EINTR) {}
}

/* Connects a watch for the app; false when recd is not there or refuses. */
static bool watch(as_session *session, asi_connection *connection) {
    char *reason = NULL;
    json_t *reply = NULL;
    bool up = asi_connection_open(connection, session->candidates, session->candidate_count, &reason)
              && asi_connection_call(connection, "watch", asi_app_arguments(session), ASI_CALL_TIMEOUT_MS, &reply,
                                     &reason) == ASI_OK
              && json_is_true(json_object_get(reply, "ok"));
    free(reason);
    json_decref(reply);
    if (!up) asi_connection_close(connection);
    return up;
}

static void *run(void *argument) {
    pthread_setname_np(pthread_self(), "audiosession");
    as_session *session = argument;
    asi_connection connection;
    asi_connection_init(&connection);
    bool ever_connected = false;
    while (!closed(session)) {
        if (!watch(session, &connection)) {
            signal_first_attempt(session);
            sleep_ms(RETRY_MS);
            continue;
        }
        if (ever_connected) {
            reapply(session);
            deliver_media_services(session, 1);
        }
        ever_connected = true;
        signal_first_attempt(session);
        read_events(session, &connection);
        asi_connection_close(&connection);
        if (closed(session)) break;
        pthread_mutex_lock(&session->request_lock);
        asi_connection_close(&session->requests);
        pthread_mutex_unlock(&session->request_lock);
        deliver_media_services(session, 0);
    }
    asi_connection_close(&connection);
    signal_first_attempt(session);
    asi_release(session);
    return NULL;
}

bool asi_events_start(as_session *session) {
    /* The thread holds a reference of its own: a session freed from one of its callbacks
     * lives until the callback returns and the thread ends. */
    atomic_fetch_add(&session->references, 1);
    int error = pthread_create(&session->thread, NULL, run, session);
    if (error) {
        atomic_fetch_sub(&session->references, 1);
        errno = error;
        return false;
    }
    session->has_thread = true;
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += 1;
    pthread_mutex_lock(&session->lock);
    while (!session->first_attempt_done)
        if (pthread_cond_timedwait(&session->first_attempt, &session->lock, &deadline) == ETIMEDOUT) break;
    pthread_mutex_unlock(&session->lock);
    return true;
}

void asi_events_stop(as_session *session) {
    if (!session->has_thread) return;
    /* From one of the session's own callbacks the thread cannot be joined: it ends by itself
     * once the callback returns, and its reference keeps the session until then. */
    if (pthread_equal(pthread_self(), session->thread)) pthread_detach(session->thread);
    else pthread_join(session->thread, NULL);
    session->has_thread = false;
}
