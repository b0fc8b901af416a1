#ifndef RECD_CMICROHTTPD_SHIM_H
#define RECD_CMICROHTTPD_SHIM_H
// libmicrohttpd's start call and connection options are variadic, which Swift cannot call:
// these fixed-argument wrappers pass what recd uses.
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// MHD_start_daemon with recd's options: the address to bind (with its length), the
/// connection limits, the per-connection memory limit (bounds the request head), the idle
/// timeout in seconds, a completion callback, and an accept policy (who may connect).
static inline struct MHD_Daemon *recd_mhd_start(
    unsigned int flags, const struct sockaddr *address,
    MHD_AccessHandlerCallback handler, void *handler_cls,
    unsigned int connection_limit, unsigned int per_ip_limit,
    size_t memory_limit, unsigned int timeout_seconds,
    MHD_RequestCompletedCallback completed, void *completed_cls,
    MHD_AcceptPolicyCallback accept_policy, void *accept_cls)
{
    return MHD_start_daemon(
        flags, 0, accept_policy, accept_cls, handler, handler_cls,
        MHD_OPTION_SOCK_ADDR, address,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_limit,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
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

/// MHD_CONTENT_READER_END_OF_STREAM / _WITH_ERROR are macros casting -1 and -2 to ssize_t.
static inline ssize_t recd_mhd_end_of_stream(void) { return MHD_CONTENT_READER_END_OF_STREAM; }
static inline ssize_t recd_mhd_end_with_error(void) { return MHD_CONTENT_READER_END_WITH_ERROR; }
static inline uint64_t recd_mhd_size_unknown(void) { return MHD_SIZE_UNKNOWN; }
#endif
