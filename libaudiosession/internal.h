/* libaudiosession's insides: what its files share, none of it exported (audiosession.map lets
 * out only the as_* functions of audiosession.h).
 *
 * The library is a client of recd's control protocol (docs/protocol.md): JSON lines over a
 * Unix stream socket, read and written with libjansson. It keeps no policy of its own: recd
 * decides and words every refusal; the library checks its own arguments, carries requests
 * and replies, and turns events into callbacks. */
#ifndef AUDIOSESSION_INTERNAL_H
#define AUDIOSESSION_INTERNAL_H

/* The header's functions are the only ones with default visibility (-fvisibility=hidden). */
#pragma GCC visibility push(default)
#include "audiosession.h"
#pragma GCC visibility pop
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>

/* The protocol version the library speaks: replies and events come with camelCase keys. */
#define ASI_PROTOCOL_VERSION 2
/* The longest line the library takes from recd. A session's reply is a few KiB; a longer line
 * is a broken or hostile peer, and the connection is dropped rather than grown without bound. */
#define ASI_MAX_LINE (4u << 20)
/* How long a call waits for recd's reply (each event or progress line that arrives first
 * starts the wait again), as recctl and the Swift library do. */
#define ASI_CALL_TIMEOUT_MS 30000
/* The most ports one list of as_attach may name. */
#define ASI_MAX_PORT_LIST 256

/* ---- text ---- */

/* A malloc'd printf; NULL only when memory ran out. */
char *asi_format(const char *format, ...) __attribute__((format(printf, 1, 2)));
/* A malloc'd copy of text with every byte sequence that is not UTF-8 replaced by U+FFFD, as
 * Swift's String(cString:) reads it (recd's vocabulary and JACK names are UTF-8; JSON must be). */
char *asi_utf8(const char *text);

/* ---- one connection to recd ---- */

typedef struct {
    int fd; /* -1: not connected */
    char *path; /* the candidate that accepted */
    char *buffer; /* bytes read and not yet taken as lines */
    size_t length, capacity;
    long long next_id;
} asi_connection;

typedef enum { ASI_OK = 0, ASI_FAILED, ASI_TIMED_OUT } asi_io;

void asi_connection_init(asi_connection *connection);
void asi_connection_close(asi_connection *connection);
/* Connects to the first candidate that accepts. On failure *reason (malloc'd) says, for each,
 * why not. */
bool asi_connection_open(asi_connection *connection, char *const *candidates, size_t count, char **reason);
/* recd sent something nobody asked for, or closed the connection: on a connection that
 * watches nothing and waits for no reply that is recd's last line before it closed it (idle
 * for [daemon] idle_client_timeout, or shutting down). Such a connection is spent. */
bool asi_connection_has_unsolicited_input(asi_connection *connection);
/* Reads one JSON line (timeout_ms -1: no limit). ASI_FAILED: the connection is spent. */
asi_io asi_connection_read(asi_connection *connection, int timeout_ms, json_t **message, char **reason);
/* Sends {"id":N,"v":2,"op":op,"interface":"c", arguments...} and waits for its reply: events
 * and the request's progress lines that arrive first are passed over. Takes arguments (may be
 * NULL). */
asi_io asi_connection_call(asi_connection *connection, const char *op, json_t *arguments, int timeout_ms,
                           json_t **reply, char **reason);

/* ---- reading what recd sent: tolerant of fields it does not know and of optional ones
 * missing; a field the caller needs that is missing or of the wrong type is an error. */

/* The string at key, or NULL. */
const char *asi_string(const json_t *object, const char *key);
/* The boolean at key into *value; false when missing or not a boolean. */
bool asi_bool(const json_t *object, const char *key, bool *value);
/* An integer at key into *value; false when missing, not an integer or out of int64 range. */
bool asi_integer(const json_t *object, const char *key, long long *value);
/* A route description ({"inputs":[ports],"outputs":[ports]}, ports {"name","type","channels"})
 * re-encoded with only those fields, as compact JSON (malloc'd); NULL when it is not one. */
char *asi_route_json(const json_t *route);
/* A list of port descriptions re-encoded the same way; NULL when it is not one. */
char *asi_ports_json(const json_t *ports);

/* ---- the session ---- */

typedef struct {
    char *client;
    char **play, **capture;
    size_t play_count, capture_count;
} asi_attachment;

/* What the application asked for, applied again when recd comes back. */
typedef struct {
    bool has_settings;
    char *category, *mode, *policy;
    uint64_t options;
    char *preferred_input; /* NULL: none to apply */
    bool speaker_override;
    int prefers_no_interruptions; /* -1: never set */
    int prefers_echo_cancelled; /* -1: never set */
    asi_attachment *attachments;
    size_t attachment_count;
    bool active;
} asi_configuration;

typedef struct {
    void (*interruption)(uint32_t type, uint32_t options, uint32_t reason, void *user);
    void *interruption_user;
    void (*route_change)(uint32_t reason, const char *previous_route_json, void *user);
    void *route_change_user;
    void (*media_services)(int reset, void *user);
    void *media_services_user;
    void (*silence_hint)(uint32_t type, void *user);
    void *silence_hint_user;
    void (*input_mute)(int muted, void *user);
    void *input_mute_user;
} asi_callbacks;

struct as_session {
    /* Set at creation, then only read. */
    char *app;
    char *mic_usage; /* NULL: none */
    char **candidates;
    size_t candidate_count;

    /* The handle's own reference and one per call under way: the last one frees. */
    atomic_int references;
    atomic_bool closed;

    /* The request connection: calls are serialized on it. */
    pthread_mutex_t request_lock;
    asi_connection requests;

    /* Configuration, callbacks and the last failure's message. */
    pthread_mutex_t lock;
    asi_configuration configuration;
    asi_callbacks callbacks;
    char *last_error;

    /* The session's thread ("audiosession"): watches events, reconnects, delivers callbacks. */
    pthread_t thread;
    bool has_thread;
    pthread_cond_t first_attempt;
    bool first_attempt_done;
};

/* A failure of one call: its code and a malloc'd message (NULL: memory ran out). */
typedef struct {
    as_status code;
    char *message;
} asi_failure;

/* Keeps the message of a failed call as the session's last error (takes message). */
void asi_remember_failure(as_session *session, char *message);
/* The reply of one successful call (its "ok" is true), or a failure: recd's error, or
 * AS_ERROR_MEDIA_SERVICES_FAILED when recd cannot be reached. Takes arguments. */
json_t *asi_call(as_session *session, const char *op, json_t *arguments, asi_failure *failure);
/* {"app": app} plus nothing else; the start of most requests' arguments. */
json_t *asi_app_arguments(const as_session *session);
/* The arguments of session.set (with the session's microphone usage description). */
json_t *asi_settings_arguments(const as_session *session, const char *category, const char *mode, uint64_t options,
                               const char *policy);
/* The arguments of session.attach for one attachment. */
json_t *asi_attach_arguments(const as_session *session, const asi_attachment *attachment);
void asi_attachment_free(asi_attachment *attachment);
/* The wire names of the AS_OPTION_* bits in options, in AVAudioSession's order. */
json_t *asi_option_names(uint64_t options);
/* The message for recd out of reach, as the Swift library words it. */
char *asi_unreachable(const as_session *session, const char *reason);

/* Starts the session's thread and waits up to a second for its first watch (so that no
 * event after as_session_new is missed); false when no thread could be made. */
bool asi_events_start(as_session *session);
/* Ends the thread; no callback runs once it returns. */
void asi_events_stop(as_session *session);
/* One line of the watch connection: an event (an object with "event" and no "id") mirrored
 * into the remembered state and delivered to the application's callback; anything else is
 * passed over. */
void asi_event(as_session *session, const json_t *message);

/* Lets go of a reference (the handle's, a call's, a thread's); the last one frees. */
void asi_release(as_session *session);
/* Drops the remembered attachment of client (an end for good, or as_detach). */
void asi_forget_attachment(as_session *session, const char *client);

/* ---- names (names.c) ---- */

/* The error code an error object of recd's carries (its "code", else its "name"). */
as_status asi_error_code(const json_t *error);
/* AS_RECORD_PERMISSION_* of a wire name; undetermined for NULL or an unknown one. */
int32_t asi_record_permission(const char *name);
/* The values of an event's names, for an event without its numeric fields. */
uint32_t asi_interruption_type(const char *name);
uint32_t asi_interruption_reason(const char *name);
uint32_t asi_route_change_reason(const char *name);

#endif
