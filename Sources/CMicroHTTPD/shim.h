#ifndef RECD_CMICROHTTPD_SHIM_H
#define RECD_CMICROHTTPD_SHIM_H
// libmicrohttpd's start call and connection options are variadic, which Swift cannot call:
// these fixed-argument wrappers pass what recd uses.
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// The URI log callback's type (MHD_OPTION_URI_LOG_CALLBACK has no typedef): called with the
/// request target as received, before libmicrohttpd decodes it; its result is the request's
/// context (the access handler's `req_cls`).
typedef void *(*recd_mhd_uri_logger)(void *cls, const char *uri, struct MHD_Connection *connection);

/// MHD_start_daemon with recd's options: the address to bind, the connection limit, the
/// per-connection memory (the request head and the reply's head share it), the idle timeout in
/// seconds, and recd's callbacks, all with `cls`: the access handler, request completed,
/// accept policy (recd counts connections per address itself), connection opened/closed, and
/// the raw request target; with `tls_key` and `tls_certificate` (PEM, both or neither) HTTPS.
/// libmicrohttpd's own per-address limit stays off: it would refuse a
/// newcomer before the accept policy could make room for it.
static inline struct MHD_Daemon *recd_mhd_start(
    unsigned int flags, const struct sockaddr *address, void *cls,
    MHD_AccessHandlerCallback handler, unsigned int connection_limit,
    size_t memory_limit, unsigned int timeout_seconds,
    MHD_RequestCompletedCallback completed, MHD_AcceptPolicyCallback accept_policy,
    MHD_NotifyConnectionCallback notify_connection, recd_mhd_uri_logger uri_logger,
    const char *tls_key, const char *tls_certificate)
{
    // TLS (libmicrohttpd's GnuTLS): TLS 1.2 and 1.3 only, GnuTLS's default ciphers among them.
    if (tls_key != NULL && tls_certificate != NULL)
        return MHD_start_daemon(
            flags | MHD_USE_TLS, 0, accept_policy, cls, handler, cls,
            MHD_OPTION_SOCK_ADDR, address,
            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
            MHD_OPTION_NOTIFY_COMPLETED, completed, cls,
            MHD_OPTION_NOTIFY_CONNECTION, notify_connection, cls,
            MHD_OPTION_URI_LOG_CALLBACK, uri_logger, cls,
            MHD_OPTION_HTTPS_MEM_KEY, tls_key,
            MHD_OPTION_HTTPS_MEM_CERT, tls_certificate,
            MHD_OPTION_HTTPS_PRIORITIES, "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2",
            MHD_OPTION_END);
    return MHD_start_daemon(
        flags, 0, accept_policy, cls, handler, cls,
        MHD_OPTION_SOCK_ADDR, address,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
        MHD_OPTION_NOTIFY_COMPLETED, completed, cls,
        MHD_OPTION_NOTIFY_CONNECTION, notify_connection, cls,
        MHD_OPTION_URI_LOG_CALLBACK, uri_logger, cls,
        MHD_OPTION_END);
}

/// The port the daemon listens on (0 when unknown): for `listen = 127.0.0.1:0` in tests.
static inline uint16_t recd_mhd_bound_port(struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/// The peer address of a connection (NULL when unknown).
static inline const struct sockaddr *recd_mhd_peer_address(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}

/// The connection's socket (-1 when unknown). libmicrohttpd closes it only after the
/// connection-closed notification.
static inline int recd_mhd_connection_fd(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/// The bytes of the request head received: request line, header lines, the empty line (0 before
/// the head is complete).
static inline size_t recd_mhd_request_head_size(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    return info == NULL ? 0 : info->header_size;
}

/// MHD_CONTENT_READER_END_OF_STREAM / _WITH_ERROR are macros casting -1 and -2 to ssize_t.
static inline ssize_t recd_mhd_end_of_stream(void) { return MHD_CONTENT_READER_END_OF_STREAM; }
static inline ssize_t recd_mhd_end_with_error(void) { return MHD_CONTENT_READER_END_WITH_ERROR; }
static inline uint64_t recd_mhd_size_unknown(void) { return MHD_SIZE_UNKNOWN; }
#endif
