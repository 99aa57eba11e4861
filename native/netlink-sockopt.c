/*
 * netlink-sockopt: the one socket option the `netlink` npm package cannot set.
 *
 * NETLINK_EXT_ACK makes the kernel append extended-ack TLVs (a message such as
 * "Attribute failed policy validation" and the offending attribute's offset) to its
 * NLMSG_ERROR answers. The package keeps its socket's file descriptor private, so the
 * socket is found by what it is: the AF_NETLINK socket of this process bound to
 * (protocol, port). Netlink port ids are unique per protocol, so the pair names one socket.
 *
 * enableExtAck(protocol: number, port: number): number  -> the fd it was set on
 * extAckEnabled(protocol: number, port: number): boolean -> getsockopt(NETLINK_EXT_ACK)
 * Both throw an Error with .code = errno name and .errno when no such socket exists (ENOENT)
 * or setsockopt fails.
 *
 * Node-API only (ABI-stable across Node versions); built by `make build` with the C compiler.
 */
#include <node_api.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/netlink.h>

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif
#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif

static napi_value throw_errno(napi_env env, int err, const char *what) {
  char msg[160];
  snprintf(msg, sizeof msg, "%s: %s", what, strerror(err));
  napi_value code, message, error, num;
  const char *name = err == ENOENT ? "ENOENT" : err == EPERM ? "EPERM" : err == ENOPROTOOPT ? "ENOPROTOOPT"
                   : err == EBADF ? "EBADF" : err == EINVAL ? "EINVAL" : "EIO";
  napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, msg, NAPI_AUTO_LENGTH, &message);
  napi_create_error(env, code, message, &error);
  napi_create_int32(env, err, &num);
  napi_set_named_property(env, error, "errno", num);
  napi_throw(env, error);
  return NULL;
}

/* the fd of this process's netlink socket bound to (protocol, port), or -1 */
static int find_netlink_fd(int protocol, uint32_t port) {
  DIR *dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  int found = -1;
  struct dirent *de;
  while ((de = readdir(dir)) != NULL) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
    int fd = atoi(de->d_name);
    if (fd == dirfd(dir)) continue;
    struct sockaddr_nl sa;
    socklen_t len = sizeof sa;
    memset(&sa, 0, sizeof sa);
    if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0 || sa.nl_family != AF_NETLINK || sa.nl_pid != port) continue;
    int proto = -1;
    socklen_t plen = sizeof proto;
    if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &plen) != 0 || proto != protocol) continue;
    found = fd;
    break;
  }
  closedir(dir);
  return found;
}

/* the fd named by the (protocol, port) arguments; -1 with a pending JS exception when none */
static int socket_arg(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t protocol = -1;
  uint32_t port = 0;
  if (argc < 2 || napi_get_value_int32(env, argv[0], &protocol) != napi_ok ||
      napi_get_value_uint32(env, argv[1], &port) != napi_ok) {
    napi_throw_type_error(env, NULL, "(protocol, port): two numbers expected");
    return -1;
  }
  int fd = find_netlink_fd(protocol, port);
  if (fd < 0) throw_errno(env, ENOENT, "no netlink socket of this process is bound to that protocol and port");
  return fd;
}

static napi_value ext_ack_enabled(napi_env env, napi_callback_info info) {
  int fd = socket_arg(env, info);
  if (fd < 0) return NULL;
  int value = 0;
  socklen_t len = sizeof value;
  if (getsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &value, &len) != 0) return throw_errno(env, errno, "getsockopt(NETLINK_EXT_ACK)");
  napi_value result;
  napi_get_boolean(env, value != 0, &result);
  return result;
}

static napi_value enable_ext_ack(napi_env env, napi_callback_info info) {
  int fd = socket_arg(env, info);
  if (fd < 0) return NULL;
  int one = 1;
  if (setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one) != 0) return throw_errno(env, errno, "setsockopt(NETLINK_EXT_ACK)");
  napi_value result;
  napi_create_int32(env, fd, &result);
  return result;
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  napi_value fn;
  napi_create_function(env, "enableExtAck", NAPI_AUTO_LENGTH, enable_ext_ack, NULL, &fn);
  napi_set_named_property(env, exports, "enableExtAck", fn);
  napi_create_function(env, "extAckEnabled", NAPI_AUTO_LENGTH, ext_ack_enabled, NULL, &fn);
  napi_set_named_property(env, exports, "extAckEnabled", fn);
  return exports;
}
