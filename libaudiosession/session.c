/* libaudiosession's functions (audiosession.h): argument checks, one request per call on the
 * session's request connection, what the application asked for remembered for the next
 * reconnection (events.c applies it again).
 *
 * Every pointer the header takes is checked before use: a NULL, a freed or a foreign session
 * handle, a NULL where a string or a result is needed, a port list that is NULL with a count,
 * holds a NULL entry or is longer than 256 is AS_ERROR_BAD_PARAM with a message, never a
 * crash. Handles are looked up in the list of live ones: a freed handle is refused as long as
 * no new session happens to get its address. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the live handles and the sessionless error ---- */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static as_session **live;
static size_t live_count, live_capacity;
/* The message of the last refusal that had no live session to keep it. */
static char *sessionless_error;

static const char not_a_session[] =
    "the session handle is NULL or was freed; make one with as_session_new and use it until as_session_free";

/* A refusal without a live session: badParam, its message kept for as_last_error_message(NULL). */
static as_status refused(char *message) {
    pthread_mutex_lock(&registry_lock);
    free(sessionless_error);
    sessionless_error = message;
    pthread_mutex_unlock(&registry_lock);
    return AS_ERROR_BAD_PARAM;
}

/* The live session behind handle with a reference for the caller (a concurrent as_session_free
 * cannot free it under the call), or NULL. */
static as_session *retain(as_session *handle) {
    as_session *found = NULL;
    pthread_mutex_lock(&registry_lock);
    for (size_t i = 0; handle && i < live_count; i++) {
        if (live[i] == handle) {
            found = handle;
            atomic_fetch_add(&found->references, 1);
            break;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    return found;
}

static void configuration_free(asi_configuration *configuration) {
    free(configuration->category);
    free(configuration->mode);
    free(configuration->policy);
    free(configuration->preferred_input);
    for (size_t i = 0; i < configuration->attachment_count; i++) asi_attachment_free(&configuration->attachments[i]);
    free(configuration->attachments);
    memset(configuration, 0, sizeof *configuration);
}

void asi_release(as_session *session) {
    if (atomic_fetch_sub(&session->references, 1) != 1) return;
    asi_connection_close(&session->requests);
    configuration_free(&session->configuration);
    pthread_mutex_destroy(&session->request_lock);
    pthread_mutex_destroy(&session->lock);
    pthread_cond_destroy(&session->first_attempt);
    for (size_t i = 0; i < session->candidate_count; i++) free(session->candidates[i]);
    free(session->candidates);
    free(session->app);
    free(session->mic_usage);
    free(session->last_error);
    free(session);
}

void asi_remember_failure(as_session *session, char *message) {
    /* A message that could not be made: memory ran out, and that is the message. */
    if (!message) message = strdup("out of memory");
    pthread_mutex_lock(&session->lock);
    free(session->last_error);
    session->last_error = message;
    pthread_mutex_unlock(&session->lock);
}

/* Ends a call: a failure's message kept as the session's last error; the reference let go. */
static as_status finish(as_session *session, asi_failure failure) {
    if (failure.code != AS_OK) asi_remember_failure(session, failure.message);
    asi_release(session);
    return failure.code;
}

static asi_failure ok(void) { return (asi_failure){AS_OK, NULL}; }

static asi_failure bad(char *message) { return (asi_failure){AS_ERROR_BAD_PARAM, message}; }

/* Opens the call on handle: the session with a reference, or NULL after refusing it. */
#define ENTER(handle)                                                                                                  \
    as_session *session = retain(handle);                                                                              \
    if (!session) return refused(strdup(not_a_session))

static asi_failure null_string(const char *name) {
    return bad(asi_format("%s is NULL; pass a NUL-terminated string", name));
}

static asi_failure null_result(const char *name) {
    return bad(asi_format("%s is NULL; pass where the result goes", name));
}

/* ---- talking to recd ---- */

char *asi_unreachable(const as_session *session, const char *reason) {
    size_t size = 1;
    for (size_t i = 0; i < session->candidate_count; i++) size += strlen(session->candidates[i]) + 2;
    char *tried = calloc(1, size);
    for (size_t i = 0; tried && i < session->candidate_count; i++) {
        if (i) strcat(tried, ", ");
        strcat(tried, session->candidates[i]);
    }
    char *message = asi_format("recd is not reachable (looked at %s): %s; start recd (systemctl start recd) — the "
                               "session reconnects by itself and applies its configuration again",
                               tried ? tried : "?", reason ? reason : "out of memory");
    free(tried);
    return message;
}

json_t *asi_call(as_session *session, const char *op, json_t *arguments, asi_failure *failure) {
    json_t *reply = NULL;
    char *reason = NULL;
    *failure = ok();
    pthread_mutex_lock(&session->request_lock);
    asi_connection *connection = &session->requests;
    /* A kept connection with something to read was closed by recd meanwhile (idle). */
    if (connection->fd >= 0 && asi_connection_has_unsolicited_input(connection)) asi_connection_close(connection);
    /* A connection that fails is dropped; one more try on a fresh one covers a recd that
     * restarted since the last call. */
    for (int attempt = 0; attempt < 2; attempt++) {
        if (connection->fd < 0
            && !asi_connection_open(connection, session->candidates, session->candidate_count, &reason)) {
            *failure = (asi_failure){AS_ERROR_MEDIA_SERVICES_FAILED, asi_unreachable(session, reason)};
            break;
        }
        free(reason);
        reason = NULL;
        asi_io io = asi_connection_call(connection, op, json_incref(arguments), ASI_CALL_TIMEOUT_MS, &reply, &reason);
        if (io == ASI_OK) break;
        asi_connection_close(connection);
        if (io == ASI_TIMED_OUT) {
            *failure = (asi_failure){AS_ERROR_UNSPECIFIED, asi_format("%s: %s", op, reason ? reason : "timed out")};
            break;
        }
        if (attempt == 1) *failure = (asi_failure){AS_ERROR_MEDIA_SERVICES_FAILED, asi_unreachable(session, reason)};
    }
    pthread_mutex_unlock(&session->request_lock);
    free(reason);
    json_decref(arguments);
    if (failure->code != AS_OK) return NULL;
    if (json_is_true(json_object_get(reply, "ok"))) return reply;
    const json_t *error = json_object_get(reply, "error");
    if (json_is_object(error)) {
        const char *message = asi_string(error, "message");
        *failure = (asi_failure){asi_error_code(error), strdup(message ? message : "no message")};
    } else {
        char *text = json_dumps(reply, JSON_COMPACT);
        *failure = (asi_failure){AS_ERROR_UNSPECIFIED,
                                 asi_format("recd answered %s without ok: %.500s", op, text ? text : "?")};
        free(text);
    }
    json_decref(reply);
    return NULL;
}

json_t *asi_app_arguments(const as_session *session) {
    json_t *arguments = json_object();
    json_object_set_new(arguments, "app", json_string(session->app));
    return arguments;
}

json_t *asi_settings_arguments(const as_session *session, const char *category, const char *mode, uint64_t options,
                               const char *policy) {
    json_t *arguments = asi_app_arguments(session);
    json_object_set_new(arguments, "category", json_string(category));
    json_object_set_new(arguments, "mode", json_string(mode));
    json_object_set_new(arguments, "options", asi_option_names(options));
    json_object_set_new(arguments, "policy", json_string(policy));
    if (session->mic_usage) json_object_set_new(arguments, "micUsage", json_string(session->mic_usage));
    return arguments;
}

static json_t *string_list(char *const *items, size_t count) {
    json_t *list = json_array();
    for (size_t i = 0; i < count; i++) json_array_append_new(list, json_string(items[i]));
    return list;
}

json_t *asi_attach_arguments(const as_session *session, const asi_attachment *attachment) {
    json_t *arguments = asi_app_arguments(session);
    json_object_set_new(arguments, "client", json_string(attachment->client));
    json_object_set_new(arguments, "playPorts", string_list(attachment->play, attachment->play_count));
    json_object_set_new(arguments, "capturePorts", string_list(attachment->capture, attachment->capture_count));
    return arguments;
}

void asi_attachment_free(asi_attachment *attachment) {
    free(attachment->client);
    for (size_t i = 0; i < attachment->play_count; i++) free(attachment->play[i]);
    for (size_t i = 0; i < attachment->capture_count; i++) free(attachment->capture[i]);
    free(attachment->play);
    free(attachment->capture);
    memset(attachment, 0, sizeof *attachment);
}

/* Sends op with arguments and lets the reply go: the status of a call that returns nothing. */
static asi_failure request(as_session *session, const char *op, json_t *arguments) {
    asi_failure failure;
    json_decref(asi_call(session, op, arguments, &failure));
    return failure;
}

/* ---- creating and freeing ---- */

/* Where recd listens: socket_path; else RECD_SOCKET; else, for a user other than root,
 * $XDG_RUNTIME_DIR/recd/control.sock, then /run/recd/control.sock (ControlSocket.candidates,
 * the rule recctl and the Swift library follow). */
static bool find_candidates(as_session *session, const char *socket_path) {
    const char *chosen = socket_path;
    const char *environment = getenv("RECD_SOCKET");
    if (!chosen && environment && *environment) chosen = environment;
    session->candidates = calloc(2, sizeof(char *));
    if (!session->candidates) return false;
    if (chosen) {
        session->candidates[session->candidate_count++] = strdup(chosen);
        return session->candidates[0] != NULL;
    }
    const char *runtime = getenv("XDG_RUNTIME_DIR");
    if (getuid() != 0 && runtime && *runtime) {
        char *path = asi_format("%s/recd/control.sock", runtime);
        if (!path) return false;
        session->candidates[session->candidate_count++] = path;
    }
    char *system = strdup("/run/recd/control.sock");
    if (!system) return false;
    session->candidates[session->candidate_count++] = system;
    return true;
}

as_session *as_session_new(const char *app, const char *socket_path, const char *mic_usage) {
    if (!app || !*app) {
        refused(strdup("app is NULL or empty; pass the application id, the session's name in recd"));
        return NULL;
    }
    as_session *session = calloc(1, sizeof *session);
    if (!session) return NULL;
    atomic_init(&session->references, 1);
    atomic_init(&session->closed, false);
    pthread_mutex_init(&session->request_lock, NULL);
    pthread_mutex_init(&session->lock, NULL);
    pthread_condattr_t clock;
    pthread_condattr_init(&clock);
    pthread_condattr_setclock(&clock, CLOCK_MONOTONIC);
    pthread_cond_init(&session->first_attempt, &clock);
    pthread_condattr_destroy(&clock);
    asi_connection_init(&session->requests);
    session->configuration.prefers_no_interruptions = -1;
    session->configuration.prefers_echo_cancelled = -1;
    session->app = asi_utf8(app);
    session->mic_usage = mic_usage ? asi_utf8(mic_usage) : NULL;
    if (!session->app || (mic_usage && !session->mic_usage) || !find_candidates(session, socket_path)) {
        asi_release(session);
        return NULL;
    }
    pthread_mutex_lock(&registry_lock);
    if (live_count == live_capacity) {
        size_t capacity = live_capacity ? live_capacity * 2 : 8;
        as_session **grown = realloc(live, capacity * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&registry_lock);
            asi_release(session);
            return NULL;
        }
        live = grown;
        live_capacity = capacity;
    }
    live[live_count++] = session;
    pthread_mutex_unlock(&registry_lock);
    /* No thread: calls still work; notifications do not come. */
    if (!asi_events_start(session)) fprintf(stderr, "audiosession: no notification thread: %s\n", strerror(errno));
    return session;
}

void as_session_free(as_session *handle) {
    if (!handle) return;
    /* A second free of the same handle finds it gone and does nothing. */
    bool found = false;
    pthread_mutex_lock(&registry_lock);
    for (size_t i = 0; i < live_count; i++) {
        if (live[i] == handle) {
            live[i] = live[--live_count];
            found = true;
            break;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    if (!found) return;
    as_session *session = handle;
    atomic_store(&session->closed, true);
    asi_events_stop(session);
    /* Waits for a call under way; attachments end with the connection. */
    pthread_mutex_lock(&session->request_lock);
    asi_connection_close(&session->requests);
    pthread_mutex_unlock(&session->request_lock);
    asi_release(session);
}

const char *as_last_error_message(as_session *handle) {
    as_session *session = retain(handle);
    const char *message;
    if (!session) {
        pthread_mutex_lock(&registry_lock);
        message = sessionless_error ? sessionless_error : "no error";
        pthread_mutex_unlock(&registry_lock);
        return message;
    }
    pthread_mutex_lock(&session->lock);
    message = session->last_error ? session->last_error : "no error";
    pthread_mutex_unlock(&session->lock);
    asi_release(session);
    return message;
}

/* ---- configuration ---- */

/* A malloc'd UTF-8 copy of a string argument, or a failure naming it. */
static char *text_argument(const char *value, asi_failure *failure) {
    char *copy = asi_utf8(value);
    if (!copy) *failure = (asi_failure){AS_ERROR_UNSPECIFIED, NULL};
    return copy;
}

as_status as_set_category(as_session *handle, const char *category, const char *mode, uint64_t options,
                          const char *policy) {
    ENTER(handle);
    if (!category) return finish(session, null_string("category"));
    asi_failure failure = ok();
    asi_configuration wanted = {.has_settings = true, .options = options};
    wanted.category = text_argument(category, &failure);
    wanted.mode = text_argument(mode ? mode : "default", &failure);
    wanted.policy = text_argument(policy ? policy : "default", &failure);
    if (failure.code == AS_OK)
        failure = request(session, "session.set",
                          asi_settings_arguments(session, wanted.category, wanted.mode, options, wanted.policy));
    if (failure.code == AS_OK) {
        pthread_mutex_lock(&session->lock);
        asi_configuration *configuration = &session->configuration;
        free(configuration->category);
        free(configuration->mode);
        free(configuration->policy);
        configuration->has_settings = true;
        configuration->category = wanted.category;
        configuration->mode = wanted.mode;
        configuration->policy = wanted.policy;
        configuration->options = options;
        pthread_mutex_unlock(&session->lock);
    } else {
        free(wanted.category);
        free(wanted.mode);
        free(wanted.policy);
    }
    return finish(session, failure);
}

as_status as_set_active(as_session *handle, int active, uint32_t options) {
    ENTER(handle);
    json_t *arguments = asi_app_arguments(session);
    asi_failure failure;
    if (active) {
        /* Held by this process: recd deactivates it when the process ends (crash, SIGKILL). */
        json_object_set_new(arguments, "hold", json_true());
        failure = request(session, "session.activate", arguments);
    } else {
        json_object_set_new(arguments, "notifyOthers",
                            json_boolean(options & AS_SET_ACTIVE_NOTIFY_OTHERS_ON_DEACTIVATION));
        json_object_set_new(arguments, "force", json_false());
        failure = request(session, "session.deactivate", arguments);
    }
    if (failure.code == AS_OK) {
        pthread_mutex_lock(&session->lock);
        session->configuration.active = active != 0;
        pthread_mutex_unlock(&session->lock);
    }
    return finish(session, failure);
}

as_status as_set_preferred_input(as_session *handle, const char *port_or_null) {
    ENTER(handle);
    asi_failure failure = ok();
    char *port = port_or_null ? text_argument(port_or_null, &failure) : NULL;
    if (failure.code == AS_OK) {
        json_t *arguments = asi_app_arguments(session);
        json_object_set_new(arguments, "input", json_string(port ? port : "none"));
        failure = request(session, "session.prefer", arguments);
    }
    if (failure.code == AS_OK) {
        pthread_mutex_lock(&session->lock);
        free(session->configuration.preferred_input);
        session->configuration.preferred_input = port;
        pthread_mutex_unlock(&session->lock);
    } else {
        free(port);
    }
    return finish(session, failure);
}

/* The preferences a flag of session.prefer sets. */
enum preference { NO_INTERRUPTIONS_FROM_SYSTEM_ALERTS, ECHO_CANCELLED_INPUT };

/* session.prefer with one flag, remembered on success. */
static as_status set_preference(as_session *handle, enum preference which, int prefers) {
    ENTER(handle);
    bool alerts = which == NO_INTERRUPTIONS_FROM_SYSTEM_ALERTS;
    /* A flag, not a count: anything but 0 or 1 is a caller's mistake (an uninitialised int). */
    if (prefers != 0 && prefers != 1)
        return finish(session, bad(asi_format("prefers is %d; pass 1 (%s) or 0", prefers,
                                              alerts ? "alerts do not interrupt" : "echo-cancelled input")));
    json_t *arguments = asi_app_arguments(session);
    json_object_set_new(arguments, alerts ? "prefersNoInterruptionsFromSystemAlerts" : "prefersEchoCancelledInput",
                        json_boolean(prefers));
    asi_failure failure = request(session, "session.prefer", arguments);
    if (failure.code == AS_OK) {
        pthread_mutex_lock(&session->lock);
        if (alerts) session->configuration.prefers_no_interruptions = prefers;
        else session->configuration.prefers_echo_cancelled = prefers;
        pthread_mutex_unlock(&session->lock);
    }
    return finish(session, failure);
}

as_status as_set_prefers_no_interruptions_from_system_alerts(as_session *handle, int prefers) {
    return set_preference(handle, NO_INTERRUPTIONS_FROM_SYSTEM_ALERTS, prefers);
}

as_status as_set_prefers_echo_cancelled_input(as_session *handle, int prefers) {
    return set_preference(handle, ECHO_CANCELLED_INPUT, prefers);
}

as_status as_override_output_audio_port(as_session *handle, int speaker) {
    ENTER(handle);
    json_t *arguments = asi_app_arguments(session);
    json_object_set_new(arguments, "port", json_string(speaker ? "speaker" : "none"));
    asi_failure failure = request(session, "session.override", arguments);
    if (failure.code == AS_OK) {
        pthread_mutex_lock(&session->lock);
        session->configuration.speaker_override = speaker != 0;
        pthread_mutex_unlock(&session->lock);
    }
    return finish(session, failure);
}

/* ---- state: session.show ---- */

/* The session object of session.show, or NULL with the failure. */
static json_t *show(as_session *session, asi_failure *failure) {
    json_t *reply = asi_call(session, "session.show", asi_app_arguments(session), failure);
    if (!reply) return NULL;
    json_t *object = json_object_get(reply, "session");
    if (!json_is_object(object)) {
        *failure = (asi_failure){AS_ERROR_UNSPECIFIED,
                                 strdup("recd sent a reply to session.show without a session object; use a library "
                                        "as new as recd")};
        json_decref(reply);
        return NULL;
    }
    json_incref(object);
    json_decref(reply);
    return object;
}

/* A flag of the session object into *out. required: a flag every recd sends; else one an older
 * recd does not (false when missing). */
static as_status show_flag(as_session *handle, const char *key, bool required, int32_t *out, const char *out_name) {
    ENTER(handle);
    if (!out) return finish(session, null_result(out_name));
    asi_failure failure;
    json_t *object = show(session, &failure);
    if (object) {
        bool value = false;
        bool present = json_object_get(object, key) != NULL;
        if ((present || required) && !asi_bool(object, key, &value)) {
            failure = (asi_failure){AS_ERROR_UNSPECIFIED,
                                    asi_format("recd sent a session this library cannot read: \"%s\" is %s; use a "
                                               "library as new as recd",
                                               key, present ? "not true or false" : "missing")};
        } else {
            *out = value ? 1 : 0;
        }
        json_decref(object);
    }
    return finish(session, failure);
}

as_status as_prefers_no_interruptions_from_system_alerts(as_session *handle, int32_t *prefers) {
    return show_flag(handle, "prefersNoInterruptionsFromSystemAlerts", false, prefers, "prefers");
}

as_status as_prefers_echo_cancelled_input(as_session *handle, int32_t *prefers) {
    return show_flag(handle, "prefersEchoCancelledInput", false, prefers, "prefers");
}

as_status as_is_echo_cancelled_input_available(as_session *handle, int32_t *available) {
    return show_flag(handle, "isEchoCancelledInputAvailable", false, available, "available");
}

_Static_assert(sizeof(int) == sizeof(int32_t), "the header's int results are 32 bits");

as_status as_is_other_audio_playing(as_session *handle, int *playing) {
    return show_flag(handle, "isOtherAudioPlaying", true, (int32_t *)playing, "playing");
}

as_status as_secondary_audio_should_be_silenced_hint(as_session *handle, int *hint) {
    return show_flag(handle, "secondaryAudioShouldBeSilencedHint", true, (int32_t *)hint, "hint");
}

/* A JSON text of the session object the caller frees with as_free; NULL on failure. */
static char *copy_json(as_session *handle, const char *key, bool route) {
    as_session *session = retain(handle);
    if (!session) {
        refused(strdup(not_a_session));
        return NULL;
    }
    asi_failure failure;
    char *text = NULL;
    json_t *object = show(session, &failure);
    if (object) {
        const json_t *value = json_object_get(object, key);
        text = route ? asi_route_json(value) : asi_ports_json(value);
        if (!text)
            failure = (asi_failure){AS_ERROR_UNSPECIFIED,
                                    asi_format("recd sent a session this library cannot read: \"%s\" is missing or "
                                               "not a list of port descriptions; use a library as new as recd",
                                               key)};
        json_decref(object);
    }
    finish(session, failure);
    return text;
}

char *as_copy_current_route_json(as_session *handle) { return copy_json(handle, "routeDescription", true); }

char *as_copy_available_inputs_json(as_session *handle) { return copy_json(handle, "availableInputs", false); }

void as_free(void *pointer) { free(pointer); }

/* ---- record permission ---- */

as_status as_record_permission(as_session *handle, int32_t *permission) {
    ENTER(handle);
    if (!permission) return finish(session, null_result("permission"));
    asi_failure failure;
    json_t *reply = asi_call(session, "permission.list", NULL, &failure);
    if (reply) {
        const char *state = NULL;
        size_t index;
        const json_t *row;
        json_array_foreach(json_object_get(reply, "permissions"), index, row) {
            const char *app = asi_string(row, "app");
            if (app && strcmp(app, session->app) == 0) {
                state = asi_string(row, "state");
                break;
            }
        }
        *permission = asi_record_permission(state);
        json_decref(reply);
    }
    return finish(session, failure);
}

/* permission.request on a connection of its own (the reply waits for an administrator). */
static asi_failure ask(char *const *candidates, size_t count, const char *app, const as_session *session,
                       int32_t *permission) {
    asi_connection connection;
    asi_connection_init(&connection);
    char *reason = NULL;
    json_t *reply = NULL;
    asi_failure failure = ok();
    if (!asi_connection_open(&connection, candidates, count, &reason)) {
        failure = (asi_failure){AS_ERROR_MEDIA_SERVICES_FAILED, asi_unreachable(session, reason)};
    } else {
        free(reason);
        json_t *arguments = json_object();
        json_object_set_new(arguments, "app", json_string(app));
        if (asi_connection_call(&connection, "permission.request", arguments, -1, &reply, &reason) != ASI_OK) {
            failure = (asi_failure){AS_ERROR_MEDIA_SERVICES_FAILED, asi_unreachable(session, reason)};
        } else if (json_is_true(json_object_get(reply, "ok"))) {
            *permission = asi_record_permission(asi_string(reply, "state"));
        } else {
            const json_t *error = json_object_get(reply, "error");
            const char *message = asi_string(error, "message");
            failure = (asi_failure){asi_error_code(error), strdup(message ? message : "no message")};
        }
    }
    free(reason);
    json_decref(reply);
    asi_connection_close(&connection);
    return failure;
}

as_status as_request_record_permission_wait(as_session *handle, int32_t *permission) {
    ENTER(handle);
    if (!permission) return finish(session, null_result("permission"));
    return finish(session, ask(session->candidates, session->candidate_count, session->app, session, permission));
}

/* What the thread of as_request_record_permission needs: its own copy of the session's
 * where and who, and the caller's callback (the session may be freed meanwhile). */
struct asking {
    as_session *session; /* a reference of the thread's own */
    void (*callback)(int granted, void *user);
    void *user;
};

static void *ask_thread(void *argument) {
    /* Named by itself: the thread is detached, and may be gone before its creator names it. */
    pthread_setname_np(pthread_self(), "as-permission");
    struct asking *asking = argument;
    as_session *session = asking->session;
    int32_t permission = AS_RECORD_PERMISSION_UNDETERMINED;
    asi_failure failure = ask(session->candidates, session->candidate_count, session->app, session, &permission);
    free(failure.message);
    asking->callback(failure.code == AS_OK && permission == AS_RECORD_PERMISSION_GRANTED, asking->user);
    asi_release(session);
    free(asking);
    return NULL;
}

as_status as_request_record_permission(as_session *handle, void (*callback)(int granted, void *user), void *user) {
    ENTER(handle);
    if (!callback) return finish(session, bad(strdup("callback is NULL; pass a function to hear the decision")));
    struct asking *asking = malloc(sizeof *asking);
    if (!asking) return finish(session, (asi_failure){AS_ERROR_UNSPECIFIED, NULL});
    atomic_fetch_add(&session->references, 1);
    *asking = (struct asking){session, callback, user};
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    int error = pthread_create(&thread, &attributes, ask_thread, asking);
    pthread_attr_destroy(&attributes);
    if (error) {
        asi_release(session);
        free(asking);
        return finish(session,
                      (asi_failure){AS_ERROR_UNSPECIFIED, asi_format("no thread to ask for permission: %s",
                                                                     strerror(error))});
    }
    return finish(session, ok());
}

/* ---- attachments ---- */

/* A port list: count entries, none NULL; a NULL list only with count 0. */
static asi_failure port_list(const char *const *list, size_t count, const char *name, char ***copy) {
    *copy = NULL;
    if (count > ASI_MAX_PORT_LIST) return bad(asi_format("%s count %zu is not 0...%d", name, count, ASI_MAX_PORT_LIST));
    if (count == 0) return ok();
    if (!list) return bad(asi_format("%s is NULL but its count is %zu", name, count));
    for (size_t i = 0; i < count; i++)
        if (!list[i]) return bad(asi_format("%s[%zu] is NULL; name each port as CLIENT:PORT", name, i));
    *copy = calloc(count, sizeof(char *));
    if (!*copy) return (asi_failure){AS_ERROR_UNSPECIFIED, NULL};
    for (size_t i = 0; i < count; i++) {
        (*copy)[i] = asi_utf8(list[i]);
        if (!(*copy)[i]) return (asi_failure){AS_ERROR_UNSPECIFIED, NULL};
    }
    return ok();
}

/* Drops the remembered attachment of client, if any (lock held). */
static void forget_attachment(asi_configuration *configuration, const char *client) {
    for (size_t i = 0; i < configuration->attachment_count; i++) {
        if (strcmp(configuration->attachments[i].client, client) == 0) {
            asi_attachment_free(&configuration->attachments[i]);
            configuration->attachments[i] = configuration->attachments[--configuration->attachment_count];
            return;
        }
    }
}

void asi_forget_attachment(as_session *session, const char *client) {
    pthread_mutex_lock(&session->lock);
    forget_attachment(&session->configuration, client);
    pthread_mutex_unlock(&session->lock);
}

as_status as_attach(as_session *handle, const char *jack_client, const char *const *play_ports, size_t play_count,
                    const char *const *capture_ports, size_t capture_count) {
    ENTER(handle);
    if (!jack_client) return finish(session, null_string("client"));
    asi_attachment attachment = {0};
    asi_failure failure = port_list(play_ports, play_count, "play_ports", &attachment.play);
    if (attachment.play) attachment.play_count = play_count;
    if (failure.code == AS_OK) {
        failure = port_list(capture_ports, capture_count, "capture_ports", &attachment.capture);
        if (attachment.capture) attachment.capture_count = capture_count;
    }
    if (failure.code == AS_OK && !(attachment.client = asi_utf8(jack_client)))
        failure = (asi_failure){AS_ERROR_UNSPECIFIED, NULL};
    if (failure.code == AS_OK) failure = request(session, "session.attach", asi_attach_arguments(session, &attachment));
    if (failure.code == AS_OK) {
        pthread_mutex_lock(&session->lock);
        asi_configuration *configuration = &session->configuration;
        forget_attachment(configuration, attachment.client);
        asi_attachment *grown =
            realloc(configuration->attachments, (configuration->attachment_count + 1) * sizeof *grown);
        if (grown) {
            configuration->attachments = grown;
            grown[configuration->attachment_count++] = attachment;
            memset(&attachment, 0, sizeof attachment);
        }
        pthread_mutex_unlock(&session->lock);
    }
    asi_attachment_free(&attachment);
    return finish(session, failure);
}

as_status as_detach(as_session *handle, const char *jack_client) {
    ENTER(handle);
    if (!jack_client) return finish(session, null_string("client"));
    char *client = asi_utf8(jack_client);
    if (!client) return finish(session, (asi_failure){AS_ERROR_UNSPECIFIED, NULL});
    json_t *arguments = asi_app_arguments(session);
    json_object_set_new(arguments, "client", json_string(client));
    asi_failure failure = request(session, "session.detach", arguments);
    if (failure.code == AS_OK) asi_forget_attachment(session, client);
    free(client);
    return finish(session, failure);
}

/* ---- callbacks ---- */

#define SET_CALLBACK(handle, field, callback, user)                                                                    \
    do {                                                                                                               \
        ENTER(handle);                                                                                                 \
        pthread_mutex_lock(&session->lock);                                                                            \
        session->callbacks.field = callback;                                                                           \
        session->callbacks.field##_user = user;                                                                        \
        pthread_mutex_unlock(&session->lock);                                                                          \
        return finish(session, ok());                                                                                  \
    } while (0)

as_status as_set_interruption_callback(as_session *handle,
                                       void (*callback)(uint32_t type, uint32_t options, uint32_t reason, void *user),
                                       void *user) {
    SET_CALLBACK(handle, interruption, callback, user);
}

as_status as_set_route_change_callback(as_session *handle,
                                       void (*callback)(uint32_t reason, const char *previous_route_json, void *user),
                                       void *user) {
    SET_CALLBACK(handle, route_change, callback, user);
}

as_status as_set_media_services_callback(as_session *handle, void (*callback)(int reset, void *user), void *user) {
    SET_CALLBACK(handle, media_services, callback, user);
}

as_status as_set_silence_secondary_audio_hint_callback(as_session *handle, void (*callback)(uint32_t type, void *user),
                                                       void *user) {
    SET_CALLBACK(handle, silence_hint, callback, user);
}

as_status as_set_input_mute_callback(as_session *handle, void (*callback)(int muted, void *user), void *user) {
    SET_CALLBACK(handle, input_mute, callback, user);
}
