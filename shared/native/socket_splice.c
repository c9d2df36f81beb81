/*
 * Moves a known number of bytes from one socket to another inside the kernel (splice(2) through a
 * pipe), so a download relayed from the object store is neither copied into the gateway's memory nor
 * copied back out of it. Each transfer runs on its own thread with its own duplicates of the two
 * descriptors: the event loop may close its sockets meanwhile without the numbers being reused under
 * the transfer. See shared/storage/s3/socket.splice.ts for when it is used.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* What the pipe between the sockets is asked to hold; the kernel may give less. */
#define PIPE_BYTES (1024 * 1024)

/*
 * What JavaScript holds of a transfer: its own duplicate of the eventfd, closed as soon as the
 * transfer ends, so a cancel after the end signals nothing. Freed once the transfer has ended and
 * the handle was collected, both of which happen on the JS thread.
 */
typedef struct {
  int fd;
  int refs;
} handle_t;

static void release_handle(handle_t *h, int close_fd) {
  if (close_fd && h->fd >= 0) {
    close(h->fd);
    h->fd = -1;
  }
  if (--h->refs == 0) free(h);
}

typedef struct {
  int from, to, pipe_r, pipe_w, cancel_fd;
  handle_t *handle;
  int64_t length, remaining, moved;
  int idle_ms;
  int error; /* 0, an errno, or -1 for the source ending early */
  int at_destination; /* the error came from writing to the destination */
  napi_threadsafe_function done;
} transfer_t;

static void close_if_open(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

/* Closes what a transfer holds and frees it. */
static void discard(transfer_t *t) {
  close_if_open(&t->from);
  close_if_open(&t->to);
  close_if_open(&t->pipe_r);
  close_if_open(&t->pipe_w);
  close_if_open(&t->cancel_fd);
  free(t);
}

static int cancelled(const transfer_t *t) {
  uint64_t v;
  return read(t->cancel_fd, &v, sizeof v) == (ssize_t)sizeof v || errno != EAGAIN;
}

static void run(transfer_t *t) {
  int64_t in_pipe = 0;
  int pipe_full = 0;
  while (t->remaining > 0 || in_pipe > 0) {
    int progress = 0;
    if (t->remaining > 0 && !pipe_full) {
      size_t want = (size_t)(t->remaining < PIPE_BYTES ? t->remaining : PIPE_BYTES);
      ssize_t n = splice(t->from, NULL, t->pipe_w, NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        t->remaining -= n;
        in_pipe += n;
        progress = 1;
      } else if (n == 0) {
        t->error = -1;
        return;
      } else if (errno == EAGAIN) {
        /* With bytes in the pipe, EAGAIN may mean the pipe is full: drain before reading again. */
        pipe_full = in_pipe > 0;
      } else if (errno != EINTR) {
        t->error = errno;
        return;
      }
    }
    if (in_pipe > 0) {
      unsigned flags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK | (t->remaining > 0 ? SPLICE_F_MORE : 0);
      ssize_t n = splice(t->pipe_r, NULL, t->to, NULL, (size_t)in_pipe, flags);
      if (n > 0) {
        in_pipe -= n;
        t->moved += n;
        pipe_full = 0;
        progress = 1;
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        t->error = errno;
        t->at_destination = 1;
        return;
      }
    }
    if (progress) continue;
    struct pollfd fds[3] = {{t->cancel_fd, POLLIN, 0}, {-1, 0, 0}, {-1, 0, 0}};
    int reading = t->remaining > 0 && !pipe_full;
    if (reading) fds[1] = (struct pollfd){t->from, POLLIN, 0};
    if (in_pipe > 0) fds[2] = (struct pollfd){t->to, POLLOUT, 0};
    /* Silence from the source is bounded; a client slow to take bytes is waited for. */
    int ready = poll(fds, 3, in_pipe > 0 ? -1 : t->idle_ms);
    if (ready < 0 && errno != EINTR) {
      t->error = errno;
      return;
    }
    if (ready == 0) {
      t->error = ETIMEDOUT;
      return;
    }
    if (fds[0].revents && cancelled(t)) {
      t->error = ECANCELED;
      return;
    }
  }
}

static void *thread_main(void *arg) {
  transfer_t *t = arg;
  run(t);
  /* The sockets are let go at once; the eventfd stays open while a cancel may still reach it. */
  close_if_open(&t->from);
  close_if_open(&t->to);
  close_if_open(&t->pipe_r);
  close_if_open(&t->pipe_w);
  /* The call hands `t` to the JS thread, which frees it: nothing of it is read after. */
  napi_threadsafe_function done = t->done;
  napi_call_threadsafe_function(done, t, napi_tsfn_blocking);
  napi_release_threadsafe_function(done, napi_tsfn_release);
  return NULL;
}

/*
 * On the JS thread: callback(error, moved, taken, atDestination), where error is 0, an errno, or -1;
 * moved counts the bytes written to the destination, taken those read from the source.
 */
static void call_js(napi_env env, napi_value callback, void *context, void *data) {
  (void)context;
  transfer_t *t = data;
  if (env != NULL) {
    napi_value args[4], global;
    napi_create_int32(env, t->error, &args[0]);
    napi_create_int64(env, t->moved, &args[1]);
    napi_create_int64(env, t->length - t->remaining, &args[2]);
    napi_get_boolean(env, t->at_destination, &args[3]);
    napi_get_global(env, &global);
    napi_call_function(env, global, callback, 4, args, NULL);
  }
  release_handle(t->handle, 1);
  discard(t);
}

static napi_value throw_errno(napi_env env, const char *what) {
  char message[128];
  snprintf(message, sizeof message, "%s: %s", what, strerror(errno));
  napi_throw_error(env, NULL, message);
  return NULL;
}

/* The handle was collected: its eventfd goes (if the transfer has not closed it), and its share of the memory. */
static void finalize_handle(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  release_handle(data, 1);
}

/* start(fromFd, toFd, length, idleMs, callback) -> a handle for cancel. */
static napi_value start(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t from, to, idle_ms;
  int64_t length;
  if (argc < 5 || napi_get_value_int32(env, argv[0], &from) != napi_ok || napi_get_value_int32(env, argv[1], &to) != napi_ok ||
      napi_get_value_int64(env, argv[2], &length) != napi_ok || napi_get_value_int32(env, argv[3], &idle_ms) != napi_ok || length <= 0) {
    napi_throw_type_error(env, NULL, "start(fromFd, toFd, length, idleMs, callback)");
    return NULL;
  }
  transfer_t *t = calloc(1, sizeof *t);
  handle_t *h = malloc(sizeof *h);
  if (!t || !h) {
    free(t);
    free(h);
    return throw_errno(env, "splice");
  }
  h->refs = 2;
  t->from = t->to = t->pipe_r = t->pipe_w = t->cancel_fd = -1;
  t->length = t->remaining = length;
  t->idle_ms = idle_ms;
  int fds[2] = {-1, -1};
  int cancel_fd = -1;
  if ((t->from = fcntl(from, F_DUPFD_CLOEXEC, 0)) < 0 || (t->to = fcntl(to, F_DUPFD_CLOEXEC, 0)) < 0 || pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0 ||
      (t->cancel_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 || (cancel_fd = fcntl(t->cancel_fd, F_DUPFD_CLOEXEC, 0)) < 0) {
    int saved = errno;
    t->pipe_r = fds[0];
    t->pipe_w = fds[1];
    if (cancel_fd >= 0) close(cancel_fd);
    free(h);
    discard(t);
    errno = saved;
    return throw_errno(env, "splice setup");
  }
  t->pipe_r = fds[0];
  t->pipe_w = fds[1];
  h->fd = cancel_fd;
  t->handle = h;
  fcntl(t->pipe_w, F_SETPIPE_SZ, PIPE_BYTES);
  napi_value name;
  napi_create_string_utf8(env, "socketSplice", NAPI_AUTO_LENGTH, &name);
  pthread_t thread;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  int started = napi_create_threadsafe_function(env, argv[4], NULL, name, 0, 1, NULL, NULL, NULL, call_js, &t->done) == napi_ok &&
                pthread_create(&thread, &attr, thread_main, t) == 0;
  pthread_attr_destroy(&attr);
  if (!started) {
    if (t->done) napi_release_threadsafe_function(t->done, napi_tsfn_abort);
    close(cancel_fd);
    free(h);
    discard(t);
    napi_throw_error(env, NULL, "splice: cannot start a thread");
    return NULL;
  }
  napi_value handle;
  napi_create_external(env, h, finalize_handle, NULL, &handle);
  return handle;
}

/* cancel(handle): the transfer stops at its next wake-up; its callback still runs. */
static napi_value cancel(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  void *data;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_get_value_external(env, argv[0], &data) != napi_ok) {
    napi_throw_type_error(env, NULL, "cancel(handle)");
    return NULL;
  }
  const handle_t *h = data;
  uint64_t one = 1;
  /* A transfer that has ended closed the handle's eventfd: nothing to stop. */
  if (h->fd >= 0 && write(h->fd, &one, sizeof one) < 0) return throw_errno(env, "splice cancel");
  return NULL;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"start", NULL, start, NULL, NULL, NULL, napi_default, NULL},
      {"cancel", NULL, cancel, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, 2, props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
