/* One connection to recd's control socket: connect, send a request line, read JSON lines.
 * A connection is used by one thread at a time (its owner locks); every system call's errno
 * is read in the function that made the call. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

char *asi_format(const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    char *text = NULL;
    int length = vasprintf(&text, format, arguments);
    va_end(arguments);
    return length < 0 ? NULL : text;
}

/* The length of the UTF-8 sequence at text (1...4), or 0 when it is not one (overlong forms,
 * surrogates and values past U+10FFFF are not). */
static size_t utf8_sequence(const unsigned char *text) {
    unsigned char c = text[0];
    if (c < 0x80) return 1;
    size_t length;
    unsigned int value;
    if (c >= 0xC2 && c <= 0xDF) length = 2, value = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) length = 3, value = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) length = 4, value = c & 0x07;
    else return 0;
    for (size_t i = 1; i < length; i++) {
        if ((text[i] & 0xC0) != 0x80) return 0; /* also stops at the terminating NUL */
        value = value << 6 | (text[i] & 0x3F);
    }
    if ((length == 3 && value < 0x800) || (length == 4 && value < 0x10000)) return 0;
    if (value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return 0;
    return length;
}

char *asi_utf8(const char *text) {
    size_t size = strlen(text);
    /* At worst every byte becomes the three of U+FFFD. */
    if (size > (SIZE_MAX - 1) / 3) return NULL;
    char *copy = malloc(size * 3 + 1);
    if (!copy) return NULL;
    const unsigned char *in = (const unsigned char *)text;
    size_t out = 0;
    while (*in) {
        size_t length = utf8_sequence(in);
        if (length == 0) {
            memcpy(copy + out, "\xEF\xBF\xBD", 3);
            out += 3;
            in++;
        } else {
            memcpy(copy + out, in, length);
            out += length;
            in += length;
        }
    }
    copy[out] = 0;
    return copy;
}

void asi_connection_init(asi_connection *connection) {
    memset(connection, 0, sizeof *connection);
    connection->fd = -1;
    connection->next_id = 1;
}

void asi_connection_close(asi_connection *connection) {
    if (connection->fd >= 0) close(connection->fd);
    free(connection->path);
    free(connection->buffer);
    asi_connection_init(connection);
}

/* Appends "; " (after the first) and a malloc'd piece to *text, taking the piece. */
static void append_reason(char **text, char *piece) {
    if (!piece) return;
    if (!*text) {
        *text = piece;
        return;
    }
    char *joined = asi_format("%s; %s", *text, piece);
    free(piece);
    if (joined) {
        free(*text);
        *text = joined;
    }
}

bool asi_connection_open(asi_connection *connection, char *const *candidates, size_t count, char **reason) {
    asi_connection_close(connection);
    *reason = NULL;
    for (size_t i = 0; i < count; i++) {
        const char *path = candidates[i];
        struct sockaddr_un address = {.sun_family = AF_UNIX};
        if (strlen(path) >= sizeof address.sun_path) {
            append_reason(reason, asi_format("%s: path too long", path));
            continue;
        }
        strcpy(address.sun_path, path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            int error = errno;
            free(*reason);
            *reason = asi_format("%s", strerror(error));
            return false;
        }
        int result;
        do result = connect(fd, (struct sockaddr *)&address, sizeof address);
        while (result < 0 && errno == EINTR);
        if (result == 0) {
            connection->fd = fd;
            connection->path = strdup(path);
            free(*reason);
            *reason = NULL;
            return true;
        }
        int error = errno;
        close(fd);
        append_reason(reason, asi_format("%s: %s", path, strerror(error)));
    }
    if (!*reason) *reason = asi_format("no socket to try");
    return false;
}

bool asi_connection_has_unsolicited_input(asi_connection *connection) {
    if (connection->length > 0) return true;
    struct pollfd entry = {.fd = connection->fd, .events = POLLIN};
    int ready;
    do ready = poll(&entry, 1, 0);
    while (ready < 0 && errno == EINTR);
    return ready != 0;
}

static long long now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* Takes the first whole line out of the buffer as JSON. 1: a message; 0: no whole line yet;
 * -1: the line is not JSON (*reason says so). */
static int take_line(asi_connection *connection, json_t **message, char **reason) {
    char *newline = connection->length ? memchr(connection->buffer, '\n', connection->length) : NULL;
    if (!newline) return 0;
    size_t line = (size_t)(newline - connection->buffer);
    json_error_t error;
    *message = json_loadb(connection->buffer, line, 0, &error);
    if (!*message) {
        *reason = asi_format("recd at %s sent a line that is not JSON: %.200s", connection->path ? connection->path : "?",
                             error.text);
    }
    connection->length -= line + 1;
    memmove(connection->buffer, newline + 1, connection->length);
    return *message ? 1 : -1;
}

asi_io asi_connection_read(asi_connection *connection, int timeout_ms, json_t **message, char **reason) {
    *message = NULL;
    *reason = NULL;
    const char *path = connection->path ? connection->path : "?";
    if (connection->fd < 0) {
        *reason = asi_format("not connected");
        return ASI_FAILED;
    }
    long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
    for (;;) {
        int taken = take_line(connection, message, reason);
        if (taken > 0) return ASI_OK;
        if (taken < 0) return ASI_FAILED;
        if (connection->length >= ASI_MAX_LINE) {
            *reason = asi_format("recd at %s sent a line longer than %u bytes", path, ASI_MAX_LINE);
            return ASI_FAILED;
        }
        int wait = -1;
        if (deadline >= 0) {
            long long left = deadline - now_ms();
            if (left <= 0) {
                *reason = asi_format("no reply from recd at %s within %d s", path, timeout_ms / 1000);
                return ASI_TIMED_OUT;
            }
            wait = (int)left;
        }
        struct pollfd entry = {.fd = connection->fd, .events = POLLIN};
        int ready = poll(&entry, 1, wait);
        if (ready < 0) {
            if (errno == EINTR) continue;
            *reason = asi_format("poll: %s", strerror(errno));
            return ASI_FAILED;
        }
        if (ready == 0) continue;
        if (connection->capacity - connection->length < 65536) {
            size_t capacity = connection->capacity ? connection->capacity * 2 : 65536;
            if (capacity > ASI_MAX_LINE + 65536) capacity = ASI_MAX_LINE + 65536;
            char *grown = capacity > connection->capacity ? realloc(connection->buffer, capacity) : NULL;
            if (!grown && capacity > connection->capacity) {
                *reason = asi_format("out of memory reading from recd");
                return ASI_FAILED;
            }
            if (grown) {
                connection->buffer = grown;
                connection->capacity = capacity;
            }
        }
        ssize_t count = read(connection->fd, connection->buffer + connection->length,
                             connection->capacity - connection->length);
        if (count < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            *reason = asi_format("cannot read from recd at %s: %s", path, strerror(errno));
            return ASI_FAILED;
        }
        if (count == 0) {
            *reason = asi_format("recd at %s closed the connection", path);
            return ASI_FAILED;
        }
        connection->length += (size_t)count;
    }
}

/* Sends text whole (one line), never raising SIGPIPE. */
static bool send_all(asi_connection *connection, const char *text, size_t size, char **reason) {
    size_t sent = 0;
    while (sent < size) {
        ssize_t count = send(connection->fd, text + sent, size - sent, MSG_NOSIGNAL);
        if (count < 0) {
            if (errno == EINTR) continue;
            *reason = asi_format("cannot send to recd at %s: %s", connection->path ? connection->path : "?",
                                 strerror(errno));
            return false;
        }
        sent += (size_t)count;
    }
    return true;
}

asi_io asi_connection_call(asi_connection *connection, const char *op, json_t *arguments, int timeout_ms,
                           json_t **reply, char **reason) {
    *reply = NULL;
    *reason = NULL;
    long long id = connection->next_id++;
    json_t *request = json_object();
    if (!request) {
        json_decref(arguments);
        *reason = asi_format("out of memory");
        return ASI_FAILED;
    }
    json_object_set_new(request, "id", json_integer(id));
    json_object_set_new(request, "v", json_integer(ASI_PROTOCOL_VERSION));
    json_object_set_new(request, "op", json_string(op));
    /* recd words what to do in its errors for the interface the caller used: this one. */
    json_object_set_new(request, "interface", json_string("libaudiosession"));
    if (arguments) json_object_update(request, arguments);
    json_decref(arguments);
    char *text = json_dumps(request, JSON_COMPACT);
    json_decref(request);
    if (!text) {
        *reason = asi_format("out of memory");
        return ASI_FAILED;
    }
    size_t size = strlen(text);
    text[size] = '\n'; /* json_dumps's NUL becomes the line's end; sent by length */
    bool sent = send_all(connection, text, size + 1, reason);
    free(text);
    if (!sent) return ASI_FAILED;
    for (;;) {
        json_t *message;
        asi_io io = asi_connection_read(connection, timeout_ms, &message, reason);
        if (io != ASI_OK) return io;
        json_t *message_id = json_object_get(message, "id");
        bool has_id = message_id != NULL;
        /* Events (no id) and this request's progress lines (no ok) come before the reply. */
        if ((json_object_get(message, "event") && !has_id)
            || (json_object_get(message, "progress") && !json_object_get(message, "ok"))) {
            json_decref(message);
            continue;
        }
        /* recd closed the connection before it read the request (idle): not its reply; the
         * caller sends it again on a new connection. */
        if (json_is_true(json_object_get(message, "closing"))) {
            json_decref(message);
            *reason = asi_format("recd closed the connection");
            return ASI_FAILED;
        }
        /* A null id: recd could not read a request. */
        if (json_is_null(message_id) || (json_is_integer(message_id) && json_integer_value(message_id) == id)) {
            *reply = message;
            return ASI_OK;
        }
        json_decref(message);
    }
}
