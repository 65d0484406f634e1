#include <stdint.h>
#include <stdarg.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/select.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>
#include <malloc.h>  // malloc_trim: the server returns freed heap after bursts

// MHD_start_daemon is variadic, which Swift cannot call: the options are passed here in C.
// Returns NULL when the address is unparseable or the port cannot be bound.
static inline struct MHD_Daemon *cmhd_start(const char *host, uint16_t port, unsigned int thread_pool,
                                            unsigned int connection_limit, unsigned int per_ip_connection_limit,
                                            unsigned int idle_timeout_seconds,
                                            size_t thread_stack_size,
                                            MHD_AccessHandlerCallback handler, void *handler_cls,
                                            MHD_RequestCompletedCallback completed, void *completed_cls) {
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) return NULL;
    // thread_pool 0: a thread per connection. Otherwise a pool of polling threads, each with its
    // own epoll set; handlers that wait suspend their connection (resumed from another thread
    // through the inter-thread channel).
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC;
    if (thread_pool == 0) flags |= MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL;  // poll, not select: descriptors past 1,023 (FD_SETSIZE) are served too
    // poll(), not epoll: libmicrohttpd 0.9.75 registers sockets edge-triggered and takes a short
    // read as "drained", so a FIN that came with the last bytes of a partial request was never
    // read and the connection hung until the idle timeout. poll() is level-triggered.
    else flags |= MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME;
    // No MHD_OPTION_LISTENING_ADDRESS_REUSE: libmicrohttpd's default (SO_REUSEADDR) restarts on a
    // port in TIME_WAIT; the option's SO_REUSEPORT let a second surveyd bind the same port and
    // take half the connections.
    struct MHD_OptionItem options[] = {
        { MHD_OPTION_SOCK_ADDR, 0, &addr },
        { MHD_OPTION_CONNECTION_LIMIT, connection_limit, NULL },
        { MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_connection_limit, NULL },
        { MHD_OPTION_CONNECTION_TIMEOUT, idle_timeout_seconds, NULL },
        { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, completed_cls },
        { MHD_OPTION_THREAD_STACK_SIZE, thread_stack_size, NULL },
        { thread_pool > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, thread_pool, NULL },
        { MHD_OPTION_END, 0, NULL },
    };
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

static inline uint16_t cmhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

// The connection's socket, or -1 (the answer of a parked request that libmicrohttpd closed is
// written on it directly; see HTTPServer.completed).
static inline int cmhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

// The client's IPv4 address as text into `out` (at least 16 bytes); "" when unknown.
// (MHD_get_connection_info is variadic, which Swift cannot call.)
static inline void cmhd_client_address(struct MHD_Connection *connection, char *out, size_t size) {
    out[0] = 0;
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL || info->client_addr->sa_family != AF_INET) return;
    inet_ntop(AF_INET, &((const struct sockaddr_in *)info->client_addr)->sin_addr, out, (socklen_t)size);
}
